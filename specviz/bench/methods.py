"""The decoders the benchmark compares, by name (the `--methods` choices and the results' "method")."""

METHODS = (
    "target",             # the target alone, token by token (specviz.baseline)
    "hf_generate",        # transformers' generate on the target alone
    "hf_assisted",        # transformers' assisted generation, constant K, no confidence early-exit
    "specviz",            # specviz's speculative decoder, recording the per-token trace
    "specviz_notrace",    # the same decoder without the trace: its speed when only speed matters
    "specviz_adaptive",   # no trace; K is a maximum, a round stops drafting once the draft is unsure
)
# The methods that draft: measured at every K of a sweep (the others once per prompt).
K_METHODS = ("hf_assisted", "specviz", "specviz_notrace", "specviz_adaptive")
