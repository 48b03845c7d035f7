"""The row-invariance harness: does a verify compute each row exactly as one-token decoding does?

Greedy speculative output equals the target alone bit for bit only if the verify
forward over K+1 positions (or a tree's nodes) gives every row the very bits that a
one-row forward at that position gives. This runs both over the same cache, hooks
every module of the model and compares each module's output row by row with
`torch.equal`, in execution order: the first module that diverges is the operation
to fix (its inputs, the outputs of the modules before it, still agreed).

Used by tests/test_row_invariance.py (tiny models, every precision), by
`scripts/row_invariance.py` (the packaged pair) and by scripts/gpu_check.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .attention import has_row_invariant_attention
from .decoding import forward_logits, lean_available, prefill, transformers_forwards
from .masked import forward_masked, verify_mask, verify_positions


@dataclass
class Divergence:
    """The first module whose output differs between the multi-row and the one-row forwards."""

    module: str           # its name in the model ("model.layers.0.self_attn"), "" for the model's logits
    kind: str             # its class name
    row: int              # the verify row (0 = the pending token, then the drafts / nodes)
    shape: tuple          # the output's shape in the multi-row forward
    max_abs_diff: float


@dataclass
class Report:
    rows: int                         # rows in the verify forward
    compared: int                     # module outputs compared (row by row)
    first: Divergence | None = None   # None: every row bit-identical at every module
    diverged: list[str] = field(default_factory=list)   # every module that diverged, in execution order

    @property
    def identical(self) -> bool:
        return self.first is None

    def line(self) -> str:
        if self.first is None:
            return f"bit-identical: {self.rows} rows, {self.compared} module inputs and outputs compared"
        d = self.first
        where = (f"the function before {d.module.removesuffix(' (input)')} ({d.kind}), seen in its input"
                 if d.module.endswith(" (input)") else f"{d.module or 'logits'} ({d.kind})")
        return (f"diverges first at {where}, row {d.row}, shape {list(d.shape)}, "
                f"largest difference {d.max_abs_diff:.3g}; {len(self.diverged)} places differ")


class _Recorder:
    """Hooks on every module: each call's first tensor input and output, in execution order.

    Inputs are recorded too because some operations are functions, not modules (the attention
    itself runs between `q_proj`/`k_proj`/`v_proj` and `o_proj`): when the first difference is
    the input of a module, the function just before it diverged.
    """

    def __init__(self, model):
        self.calls: list[tuple[str, str, torch.Tensor]] = []
        self.handles = []
        for name, m in model.named_modules():
            if name:
                self.handles.append(m.register_forward_pre_hook(self._pre_hook(name)))
                self.handles.append(m.register_forward_hook(self._hook(name)))

    def _pre_hook(self, name):
        def hook(module, args):
            x = args[0] if args else None
            if isinstance(x, torch.Tensor) and x.is_floating_point() and x.dim() >= 2:
                self.calls.append((f"{name} (input)", type(module).__name__, x.detach().clone()))
        return hook

    def _hook(self, name):
        def hook(module, args, output):
            out = output[0] if isinstance(output, (tuple, list)) and output else output
            if isinstance(out, torch.Tensor) and out.dim() >= 2:
                self.calls.append((name, type(module).__name__, out.detach().clone()))
        return hook

    def close(self):
        for h in self.handles:
            h.remove()


def _recorded(model, run) -> tuple[list, torch.Tensor]:
    recorder = _Recorder(model)
    try:
        logits = run()
    finally:
        recorder.close()
    return recorder.calls, logits


def _row(t: torch.Tensor, index: int, rows: int) -> torch.Tensor | None:
    """Row `index` of an output whose sequence dimension (1) holds `rows` positions; None if it has none."""
    return t[:, index] if t.shape[1] == rows else None


def _compare(multi: list, multi_logits: torch.Tensor, singles: dict[int, tuple[list, torch.Tensor]],
             rows: int) -> Report:
    """`singles[r]` = the one-row forward that computes verify row r (its calls and logits)."""
    report = Report(rows=rows, compared=0)
    by_module: dict[tuple[str, int], list] = {}
    for r, (calls, _) in singles.items():
        seen: dict[str, int] = {}
        for name, kind, out in calls:
            by_module[(name, seen.get(name, 0), r)] = out
            seen[name] = seen.get(name, 0) + 1
    seen = {}
    for name, kind, out in multi:
        call = seen.get(name, 0)
        seen[name] = call + 1
        for r in singles:
            mine, ref = _row(out, r, rows), by_module.get((name, call, r))
            if mine is None or ref is None or ref.shape[1] != 1:
                continue
            report.compared += 1
            if not torch.equal(mine, ref[:, 0]):
                _note(report, name, kind, r, out.shape, mine, ref[:, 0])
    for r, (_, logits) in singles.items():
        report.compared += 1
        if not torch.equal(multi_logits[r], logits[-1]):
            _note(report, "", "logits", r, tuple(multi_logits.shape), multi_logits[r], logits[-1])
    return report


def _note(report: Report, name, kind, row, shape, a, b) -> None:
    if (name or "logits") not in report.diverged:
        report.diverged.append(name or "logits")
    if report.first is None:
        diff = (a.float() - b.float()).abs().max().item() if a.shape == b.shape else float("inf")
        report.first = Divergence(name, kind, row, tuple(shape), diff)


@torch.inference_mode()
def chain_report(model, context: list[int], drafts: list[int], static: bool = False) -> Report:
    """A chain verify ([last context token, drafts]) against one-row forwards at the same positions.

    `context` is what the decoder has committed (the cache holds all but its last token).
    `static` runs both on a static cache, as the compiled paths do (here without compiling).
    """
    tokens = torch.tensor(context + drafts)
    n, rows = len(context), len(drafts) + 1
    max_len = len(tokens) + 2

    with transformers_forwards():   # every module's rows (the lean stack calls few modules: its logits below)
        cache = prefill(model, tokens[None, :n], static=static, max_len=max_len)
        multi, multi_logits = _recorded(model, lambda: forward_logits(model, tokens[n - 1:], cache, rows))
        cache = prefill(model, tokens[None, :n], static=static, max_len=max_len)
        singles = {}
        for r in range(rows):
            singles[r] = _recorded(model, lambda: forward_logits(model, tokens[n - 1 + r:n + r], cache, 1))
    report = _compare(multi, multi_logits, singles, rows)
    if not static and lean_available(model):
        _compare_lean(report, model, tokens, n, rows, singles)
    return report


def _compare_lean(report: Report, model, tokens: torch.Tensor, n: int, rows: int, singles: dict) -> None:
    """The lean stack's verify rows and its one-token steps (what the decoder runs where it has one) against the
    modules' one-token logits, bit for bit."""
    cache = prefill(model, tokens[None, :n])
    multi = forward_logits(model, tokens[n - 1:], cache, rows)
    cache = prefill(model, tokens[None, :n])
    for r in range(rows):
        one = forward_logits(model, tokens[n - 1 + r:n + r], cache, 1)
        report.compared += 2
        for name, mine in (("lean verify", multi[r]), ("lean step", one[-1])):
            if not torch.equal(mine, singles[r][1][-1]):
                _note(report, name, "logits", r, tuple(multi.shape), mine, singles[r][1][-1])


@torch.inference_mode()
def tree_report(model, context: list[int], shape, nodes: list[int]) -> Report:
    """A tree verify (the pending token, then every node under the tree mask) against one-row forwards
    along each node's branch (its ancestors in order, then itself), over a cache of the context. `shape` is
    read by its `parents`, `depths` and `ancestry` (a specviz.engine.tree.TreeShape)."""
    if len(nodes) != shape.size:
        raise ValueError(f"a tree of {shape.size} nodes needs {shape.size} tokens, got {len(nodes)}")
    tokens = torch.tensor(context)
    n, rows = len(context), shape.size + 1

    with transformers_forwards():   # every module's rows; chain_report checks the lean stack's steps against them
        cache = prefill(model, tokens[None])
        ids, seen = torch.tensor([context[-1]] + nodes)[None], cache.get_seq_length()
        positions, allowed = verify_positions(shape.depths, seen, 1), verify_mask(shape.ancestry, seen, 1)
        multi, multi_logits = _recorded(model, lambda: forward_masked(model, ids, cache, positions, allowed, rows)[0])
        singles = {}
        for r in range(rows):
            branch = [] if r == 0 else _branch(shape, r - 1)
            cache = prefill(model, tokens[None])
            feed = [context[-1]] + [nodes[i] for i in branch]
            for token in feed[:-1]:
                forward_logits(model, torch.tensor([token]), cache, 1)
            singles[r] = _recorded(model, lambda: forward_logits(model, torch.tensor(feed[-1:]), cache, 1))
    report = _compare(multi, multi_logits, singles, rows)
    if lean_available(model):   # the lean stack's tree verify against the modules' one-token logits
        cache = prefill(model, tokens[None])
        lean = forward_masked(model, ids, cache, positions, allowed, rows)[0]
        for r in range(rows):
            report.compared += 1
            if not torch.equal(lean[r], singles[r][1][-1]):
                _note(report, "lean tree verify", "logits", r, tuple(lean.shape), lean[r], singles[r][1][-1])
    return report


def _branch(shape, node: int) -> list[int]:
    """Node indices from the root's child down to `node`."""
    path = []
    while node >= 0:
        path.append(node)
        node = shape.parents[node]
    return path[::-1]


def identity_limit(model, compiled: bool = False) -> str | None:
    """None when the target's verify is row-invariant by construction (so greedy output is bit-identical to
    the target alone), else the reason it is not: "gpu", "compiled", "attention" or "dense".

    What is row-invariant was found with the harness above: PyTorch's weight-only int8 and 4-bit CPU
    products (layers that say `row_invariant = True`) and, with the row-by-row attention, the norms,
    rotary embeddings, activations and residuals of Qwen2 and Llama. Dense fp32 and bf16 products
    (oneDNN / MKL) are not: they block rows differently when several are multiplied at once.
    """
    device = next(model.parameters()).device if any(True for _ in model.parameters()) else torch.device("cpu")
    if device.type != "cpu":
        return "gpu"
    if compiled:
        return "compiled"
    if not has_row_invariant_attention(model):   # given at load (runtime.setup.prepare), never by the decoder
        return "attention"
    head_or_linear = [m for m in model.modules() if isinstance(m, torch.nn.Linear) or hasattr(m, "in_features")]
    if any(not getattr(m, "row_invariant", False) for m in head_or_linear):
        return "dense"
    return None
