"""A file's check costs linear time in its kernels: no check walks the module's whole kernel
list once per kernel (that made 55,000 lines take 13 s where 2,000 took 0.27)."""

from __future__ import annotations

from tritonsmith.analysis.document import Document
from tritonsmith.analysis.index import index_module
from tritonsmith.rules import Matcher, load_rules, pack_paths

MATCHER = Matcher(load_rules(pack_paths(None, include_user=False)), version=(3, 9))

HEADER = "import torch\nimport triton\nimport triton.language as tl\n\n"
UNIT = '''
@triton.jit
def _scale_{n}(x, factor):
    return x * factor


@triton.jit
def kernel_{n}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, _scale_{n}(x, 2.0), mask=mask)


def launch_{n}(x):
    out = torch.empty_like(x)
    kernel_{n}[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), BLOCK=256)
    return out
'''


class CountingList(list):
    """A list that counts how often it is walked from the start."""

    def __init__(self, items):
        super().__init__(items)
        self.walks = 0

    def __iter__(self):
        self.walks += 1
        return super().__iter__()


def walks_of_the_kernel_list(units: int) -> int:
    document = Document(HEADER + "".join(UNIT.format(n=n) for n in range(units)))
    index = index_module(document.root)
    assert len(index.kernels) == 2 * units
    index.kernels = CountingList(index.kernels)
    MATCHER.__init__(MATCHER.rules, version=(3, 9))  # an empty per-kernel cache: check everything
    MATCHER.check_module(document.source, index)
    return index.kernels.walks


def test_the_kernel_list_is_walked_a_fixed_number_of_times_however_many_kernels():
    small, large = walks_of_the_kernel_list(5), walks_of_the_kernel_list(20)
    assert large == small, f"{small} walks over 10 kernels, {large} over 40: a check walks it per kernel"


def test_a_kernel_called_by_another_is_a_helper_and_one_calling_itself_is_not():
    document = Document(HEADER + UNIT.format(n=0) + '''
@triton.jit
def _alone(x):
    return _alone(x)
''')
    index = index_module(document.root)
    by_name = {k.name: k for k in index.kernels}
    assert index.called_by_another(by_name["_scale_0"])
    assert not index.called_by_another(by_name["kernel_0"])
    assert not index.called_by_another(by_name["_alone"])
    assert index.jit_callees(excluding=by_name["kernel_0"]) >= {"_alone"}
    assert "_scale_0" not in index.jit_callees(excluding=by_name["kernel_0"])
    # With no launch in a file, its entries are the jit functions no other one calls; a
    # function's own `def name(` is not a call of it.
    assert {k.name for k in index.kernels} - index.jit_callees() == {"kernel_0"}


def test_a_file_that_launches_nothing_compiles_its_entry_kernels():
    from tritonsmith.evaluator.reports import kernels_to_compile

    index = index_module(Document(HEADER + UNIT.format(n=0).split("def launch_0")[0]).root)
    assert [k.name for k in kernels_to_compile(index, None)] == ["kernel_0"]
    assert [k.name for k in kernels_to_compile(index, ["_scale_0"])] == ["_scale_0"]
