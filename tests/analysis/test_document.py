"""Incremental edits keep a Document's text, tree and line table equal to a fresh parse.

Edits arrive in LSP terms (line, UTF-16 column). The reference below applies each edit to a
plain Python string by its own position arithmetic, so the Document is checked against an
independent model, not against itself.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tritonsmith.analysis.document import Document, _line_starts, byte_col, utf16_col

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Adds two vectors. Caf\u00e9 \U0001F680 in a docstring."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)  # \u00e9\u00e9
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add(x, y, out):
    n = out.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
'''

# Pieces that edits insert: code fragments, line breaks of both kinds, non-ASCII text with
# characters of one, two, three and four UTF-8 bytes (the emoji takes two UTF-16 units).
FRAGMENTS = [
    "", "x", "(", ")", ":", "    ", "\n", "\r\n", "\n\n", "é", "\U0001F680", "😀x", "中文",
    "def f(a, b):\n    return a + b\n", "if x:\n    pass\nelse:\n    y = 1\n",
    "tl.load(p + offs, mask=m)", "'''", '"', "#", " # comment é\n", "@triton.jit\n",
    "    z = (1 +\n         2)\n", "\t", "[", "]", "lambda: 0", "\r\n    w = 'é😀'\r\n",
]


def tree_shape(document: Document) -> list[tuple]:
    """Every node with its type, byte range and points: equal shapes mean equal trees."""
    out = []
    cursor = document.tree.walk()
    visited = False
    while True:
        node = cursor.node
        if not visited:
            out.append((
                node.type, node.start_byte, node.end_byte, tuple(node.start_point),
                tuple(node.end_point), node.is_missing, node.has_error,
            ))
            if cursor.goto_first_child():
                continue
        if cursor.goto_next_sibling():
            visited = False
            continue
        if not cursor.goto_parent():
            return out
        visited = True


# -- the reference model ------------------------------------------------------------------


def ref_offset(text: str, line: int, character: int) -> int:
    """Byte offset of an LSP position in `text`, clamped like LSP clients expect: a column past
    the end of a line means its end (before CR LF), a line past the end means the end."""
    data = text.encode("utf-8")
    lines = text.split("\n")
    if line >= len(lines):
        return len(data)
    start = sum(len(chunk.encode("utf-8")) + 1 for chunk in lines[:line])
    content = lines[line][:-1] if lines[line].endswith("\r") else lines[line]
    units = 0
    prefix = ""
    for char in content:
        width = 2 if ord(char) > 0xFFFF else 1
        if units + width > character:  # a column inside a surrogate pair means the character's start
            break
        units += width
        prefix += char
    return start + len(prefix.encode("utf-8"))


def ref_apply(text: str, start: tuple[int, int], end: tuple[int, int], new_text: str) -> str:
    data = text.encode("utf-8")
    start_byte = ref_offset(text, *start)
    end_byte = max(ref_offset(text, *end), start_byte)
    return (data[:start_byte] + new_text.encode("utf-8") + data[end_byte:]).decode("utf-8")


def lsp_position(text: str, line: int, fraction_col: float) -> tuple[int, int]:
    """A valid LSP position on `line` (a character boundary) picked by a fraction."""
    lines = text.split("\n")
    line = min(line, len(lines) - 1)
    content = lines[line][:-1] if lines[line].endswith("\r") else lines[line]
    index = min(int(fraction_col * (len(content) + 1)), len(content))
    return line, len(content[:index].encode("utf-16-le")) // 2


def assert_consistent(document: Document, expected_text: str) -> None:
    assert document.source == expected_text.encode("utf-8")
    assert document.text == expected_text
    fresh = Document(expected_text)
    assert str(document.root) == str(fresh.root)
    assert tree_shape(document) == tree_shape(fresh)
    assert document._line_starts == _line_starts(document.source)
    assert document.line_count == expected_text.count("\n") + 1


# -- examples -----------------------------------------------------------------------------


def test_fresh_document_matches_its_text():
    document = Document(KERNEL)
    assert document.text == KERNEL
    assert not document.root.has_error
    assert document.line_count == KERNEL.count("\n") + 1
    assert document.line(4) == b"@triton.jit"


def test_insert_a_line_inside_a_kernel():
    document = Document(KERNEL)
    document.edit((8, 0), (8, 0), "    other = tl.zeros([BLOCK], tl.float32)\n")
    expected = ref_apply(KERNEL, (8, 0), (8, 0), "    other = tl.zeros([BLOCK], tl.float32)\n")
    assert_consistent(document, expected)
    assert document.line(8) == b"    other = tl.zeros([BLOCK], tl.float32)"


def test_multi_line_delete_and_insert():
    document = Document(KERNEL)
    expected = KERNEL
    for start, end, new in [
        ((7, 4), (12, 0), ""),  # delete five lines from mid-line
        ((5, 0), (5, 3), "async def"),
        ((1, 0), (3, 0), "import triton.language as tl\nfrom triton import jit\n\n\n\n"),
        ((0, 0), (100, 0), ""),  # delete everything
        ((0, 0), (0, 0), KERNEL),  # type it all back
    ]:
        document.edit(start, end, new)
        expected = ref_apply(expected, start, end, new)
        assert_consistent(document, expected)
    assert document.text == KERNEL


def test_edits_at_end_of_file():
    document = Document(KERNEL)
    expected = KERNEL
    last = KERNEL.count("\n")
    for new in ["x = 1", "\n", "def g():\n", "    return 2\n", "\r\n# é😀"]:
        lines = expected.split("\n")
        end = (len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2)
        document.edit(end, end, new)
        expected = ref_apply(expected, end, end, new)
        assert_consistent(document, expected)
    # A position past the last line means the end of the document.
    document.edit((last + 50, 0), (last + 60, 3), "\nz = 3\n")
    expected = expected + "\nz = 3\n"
    assert_consistent(document, expected)


def test_crlf_document():
    text = KERNEL.replace("\n", "\r\n")
    document = Document(text)
    assert document.line(4) == b"@triton.jit"  # no CR in a line
    # A column past the end of a CRLF line lands before the CR.
    document.edit((4, 200), (4, 200), "  # jit")
    expected = ref_apply(text, (4, 200), (4, 200), "  # jit")
    assert "@triton.jit  # jit\r\n" in expected
    assert_consistent(document, expected)
    document.edit((6, 0), (9, 0), "    pid = 0\r\n")
    expected = ref_apply(expected, (6, 0), (9, 0), "    pid = 0\r\n")
    assert_consistent(document, expected)


def test_utf16_columns_for_non_ascii():
    text = "s = 'é😀x'\n"
    document = Document(text)
    # s = 'é😀x': UTF-16 columns: ' at 4, é at 5, emoji at 6-7, x at 8.
    assert document.lsp_to_point(0, 5) == (0, 5)
    assert document.lsp_to_point(0, 6) == (0, 7)  # é is two bytes
    assert document.lsp_to_point(0, 8) == (0, 11)  # the emoji is four bytes, two units
    assert document.point_to_lsp(0, 11) == (0, 8)
    document.edit((0, 6), (0, 8), "")  # delete the emoji
    assert_consistent(document, "s = 'éx'\n")
    document.edit((0, 5), (0, 6), "\U0001F680\U0001F680")  # replace é by two emoji
    assert_consistent(document, "s = '\U0001F680\U0001F680x'\n")


def test_column_conversions_round_trip():
    line = "a é 😀 中 b".encode()
    for char_index in range(len(line.decode()) + 1):
        prefix = line.decode()[:char_index]
        units = len(prefix.encode("utf-16-le")) // 2
        column = len(prefix.encode())
        assert byte_col(line, units) == column
        assert utf16_col(line, column) == units
    assert byte_col(line, 10_000) == len(line)
    assert byte_col(b"abc", 10) == 3


def test_replace_resets_everything():
    document = Document(KERNEL)
    document.edit((0, 0), (0, 0), "broken (\n")
    document.replace("x = 1\r\ny = 2\n")
    assert_consistent(document, "x = 1\r\ny = 2\n")


# -- random edit sequences ----------------------------------------------------------------

edit_strategy = st.tuples(
    st.floats(0, 1), st.floats(0, 1),  # start
    st.integers(0, 3), st.floats(0, 1),  # end: lines after start, column fraction
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.lists(st.sampled_from(FRAGMENTS), max_size=4).map("".join),
        st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"), max_size=12),
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start_text=st.sampled_from([KERNEL, KERNEL.replace("\n", "\r\n"), "", "x", "é😀\n中"]),
    edits=st.lists(edit_strategy, min_size=1, max_size=12),
)
def test_random_edit_sequences_match_a_fresh_parse(start_text, edits):
    document = Document(start_text)
    expected = start_text
    for start_line, start_col, extra_lines, end_col, new_text in edits:
        line_count = expected.count("\n") + 1
        start = lsp_position(expected, int(start_line * line_count), start_col)
        end = lsp_position(expected, start[0] + extra_lines, end_col)
        if end < start:
            end = start
        document.edit(start, end, new_text)
        expected = ref_apply(expected, start, end, new_text)
        assert document.source == expected.encode("utf-8")
        assert document._line_starts == _line_starts(document.source)
        # Rows and offsets read through the pending shift of the lines after the last edit.
        fresh = Document(expected)
        for offset in range(0, len(document.source) + 1, max(1, len(document.source) // 40)):
            assert document.point(offset) == fresh.point(offset)
            row, column = fresh.point(offset)
            assert document.offset(row, column) == offset and document.line(row) == fresh.line(row)
    assert_consistent(document, expected)


@settings(max_examples=100, deadline=None)
@given(
    edits=st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 120), st.integers(0, 40), st.integers(0, 120),
                  st.sampled_from(FRAGMENTS)),
        min_size=1, max_size=8,
    )
)
def test_out_of_range_positions_are_clamped(edits):
    """Columns past a line's end and lines past the document's end are clamped, never raise."""
    document = Document(KERNEL)
    expected = KERNEL
    for l1, c1, l2, c2, new_text in edits:
        start, end = (l1, c1), (l2, c2)
        if end < start:
            start, end = end, start
        document.edit(start, end, new_text)
        expected = ref_apply(expected, start, end, new_text)
        assert document.source == expected.encode("utf-8")
    assert_consistent(document, expected)


def test_typing_a_kernel_character_by_character():
    """The common editor case: one character per edit, including newlines and the emoji."""
    text = KERNEL.replace("Caf", "Café 😀 ")
    document = Document("")
    line, column = 0, 0
    for char in text:
        document.edit((line, column), (line, column), char)
        if char == "\n":
            line, column = line + 1, 0
        else:
            column += 2 if ord(char) > 0xFFFF else 1
    assert_consistent(document, text)


def test_reversed_range_is_an_insertion_at_its_start():
    document = Document(KERNEL)
    document.edit((8, 4), (6, 2), "zz\n")
    assert_consistent(document, ref_apply(KERNEL, (8, 4), (6, 2), "zz\n"))


def test_a_column_inside_a_surrogate_pair_means_the_characters_start():
    """Hypothesis found this once in CI: "🚀" is two UTF-16 units; deleting (0,0)-(0,1) cuts
    inside it, which deletes nothing (the model used to round up and delete the rocket)."""
    document = Document(KERNEL)
    document.edit((0, 0), (0, 0), "🚀")
    document.edit((0, 0), (0, 1), "")
    assert document.source == ("🚀" + KERNEL).encode("utf-8")
    assert ref_apply("🚀" + KERNEL, (0, 0), (0, 1), "") == "🚀" + KERNEL
