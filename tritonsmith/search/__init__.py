"""Kernel search ("Optimize this kernel"): AdaExplore's diversity-preserving tree search.

Modules:
    model      the plain data: steps, outcomes, evaluations, proposer context, `Proposer`
    tree       the tree: rewards, values, UCB selection with the expand arm, refine or
               regenerate, the diverse pool
    journal    every evaluated node in `.tritonsmith/state.db`, as it happens; resume
    proposers  offline (config space and structural transformations), Anthropic, OpenAI-compatible
    guardian   the static rule check every candidate passes before it costs an evaluation
    evaluate   compile, verify and time one candidate in the evaluator's workers
    engine     the search loop: budget, concurrency, cancellation, progress, the result
"""
