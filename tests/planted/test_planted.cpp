// placeholder
int unused_placeholder;
