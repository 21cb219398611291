"""The submission driver's parts (harness/backends/submission_driver.py runs them): the pipe protocol and a
submission's declarations (protocol.py), and the inputs a submission is handed and the read-back of
its outputs (inputs.py)."""
