// doctest_main.cpp — the main() of every CPU test executable.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "test_reference_cache.hpp"
