"""How forwards run: KV caches, the prefill and the run's set-up (`decoding`), eager / compiled / CUDA-graph forwards
(`forwards`, `graphs`), the row-invariant attention and its harness (`attention`, `invariance`), and ZeroGPU."""
