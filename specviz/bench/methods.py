"""The decoders the benchmark compares, by name (the `--methods` choices and the results' "method")."""

METHODS = (
    "target",               # the target alone, token by token (specviz.engine.baseline)
    "hf_generate",          # transformers' generate on the target alone
    "hf_static",            # the same with cache_implementation="static" (meant for CUDA; see default_methods)
    "hf_assisted",          # transformers' assisted generation, constant K, no confidence early-exit
    "hf_assisted_default",  # assisted generation with transformers' own defaults (20 tokens, confidence 0.4)
    "hf_prompt_lookup",     # transformers' prompt lookup decoding (prompt_lookup_num_tokens=K), no draft model
    "specviz",              # specviz's speculative decoder, recording the per-token trace
    "specviz_notrace",      # the same decoder without the trace: its speed when only speed matters
    "specviz_adaptive",     # no trace; K is a maximum, a round stops drafting once the draft is unsure
    "specviz_ngram",        # no trace; prompt lookup drafts (what followed the last n-gram earlier), no draft model
    "specviz_hybrid",       # no trace; lookup on a match of 3+ tokens, else the draft model with the adaptive stop
    "specviz_trimmed",      # no trace; the draft model with its output layer cut to the 32k most frequent tokens
    "specviz_hybrid_trimmed",  # no trace; the hybrid whose model rounds draft with that trimmed head
    "specviz_tree",         # no trace; a draft tree of K nodes per target pass (EAGLE-2's dynamic tree when greedy)
    "specviz_hybrid_tree",  # no trace; lookup on a match of 3+ tokens, else a dynamic tree of K nodes read one row a depth
)
# Peers outside specviz and transformers, run only where their package is installed (never by default
# otherwise): llama.cpp on the target's own GGUF file (specviz.bench.llamacpp, optional llama-cpp-python).
PEER_METHODS = (
    "llamacpp_target",      # llama.cpp's own decode of the target GGUF alone, token by token
    "llamacpp_lookup",      # llama-cpp-python's prompt lookup decoding (num_pred_tokens=K) on the same GGUF
)
ALL_METHODS = METHODS + PEER_METHODS
# The methods that draft: measured at every K of a sweep (the others once per prompt).
K_METHODS = ("hf_assisted", "hf_prompt_lookup", "specviz", "specviz_notrace", "specviz_adaptive",
             "specviz_ngram", "specviz_hybrid", "specviz_trimmed", "specviz_hybrid_trimmed", "specviz_tree",
             "specviz_hybrid_tree", "llamacpp_lookup")
# Drafting without a draft model (prompt lookup): no c, so no theory for them.
LOOKUP_METHODS = ("hf_prompt_lookup", "specviz_ngram", "llamacpp_lookup")
# Plain decoding with the target: the baselines every speedup is also reported against.
TARGET_ALONE = ("target", "hf_generate", "hf_static")
# transformers' decoders, the peers of ratio_vs_hf_best.
HF_METHODS = ("hf_generate", "hf_static", "hf_assisted", "hf_assisted_default", "hf_prompt_lookup")
# specviz's speed modes, the candidates of its best method (the trace-recording "specviz" is the visualizer's mode).
SPECVIZ_SPEED_METHODS = ("specviz_notrace", "specviz_adaptive", "specviz_ngram", "specviz_hybrid",
                         "specviz_trimmed", "specviz_hybrid_trimmed", "specviz_tree", "specviz_hybrid_tree")
# Methods whose K counts a tree's nodes, not a chain's drafts: the chain theory does not model them.
TREE_METHODS = ("specviz_tree", "specviz_hybrid_tree")
# The tree each tree method drafts at K nodes (specviz.engine.tree_drafter.tree_plan's spelling).
TREE_SPECS = {"specviz_tree": "dynamic:{k}", "specviz_hybrid_tree": "hybrid:{k}:{k}:2:1"}


def default_methods(device) -> list[str]:
    """Every method that makes sense on `device`: hf_static only on CUDA.

    A static cache exists to be compiled into CUDA graphs; on a CPU it is eager
    decoding with a preallocated cache, slower than hf_generate and not the
    configuration anyone would deploy. Name it in --methods to run it anyway.
    """
    on_cuda = str(device).startswith("cuda")
    return [m for m in METHODS if on_cuda or m != "hf_static"]
