"""`tritonsmith bench`: the search on a folder of KernelBench-format problems, measured the way
AdaExplore reports it.

Modules:
    metrics   accuracy, clamped mean speedup, Fast@p, GM(10) (AdaExplore, section 8)
    runner    one search per problem, in order, with the same budget; per-step best speedups
    report    JSON, Markdown, PNG plots and a self-contained HTML page
"""
