"""Every linear type and both precision policies: int8 and oneDNN products and the draft's policy (`kernels`), bf16 /
int4 products and the target's policy (`weights`), specviz's own 4-bit kernels (`q4a8`, sources in `csrc/`) and the
cache of converted weights (`weights_cache`)."""
