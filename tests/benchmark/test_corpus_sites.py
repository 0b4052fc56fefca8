"""The latency benchmarks' edit sites (bench/corpus.py): in kernels' bodies, or in the host
functions that launch them, and every edit keeps the file valid Python."""

from __future__ import annotations

from bench_scripts import load

from tritonsmith.analysis import Document, index_module


def test_edit_sites_are_in_kernels_or_in_host_functions_and_keep_the_file_valid():
    corpus = load("corpus")
    text = corpus.generate(600)
    document = Document(text)
    index = index_module(document.root)
    spans = [(k.outer.start_point[0], k.outer.end_point[0]) for k in index.kernels]
    lines = text.split("\n")
    for where, inside in (("kernel", True), ("host", False)):
        sites = corpus.editable_sites(text, where)
        assert len(sites) >= 10
        for row, column in sites:
            assert any(a <= row <= b for a, b in spans) is inside, (where, row)
            edited = "\n".join(lines[:row] + [lines[row][:column] + "x" + lines[row][column:]] + lines[row + 1:])
            assert not Document(edited).root.has_error, (where, row)
