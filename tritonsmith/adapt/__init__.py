"""Learning from failures: offline and model-written rule induction over the failure log,
graduation of learned rules into typed matchers, their self-correction, and the self-improvement
loop. What it learns from and writes to lives in the state package (`tritonsmith/state`).

Nothing is imported here: the command line registers `adapt`'s subcommands (`cli/adapt.py`) on
every run, and `tritonsmith check` should not pay for importing induction to do so.
"""
