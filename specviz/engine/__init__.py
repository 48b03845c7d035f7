"""The algorithm: what a run is asked to do (`options`), the speculative loop (`speculative`), the target alone
(`baseline`), the acceptance rule (`rule`, for any tree: a chain is the width-one tree), sampling, tree shapes, the drafters
and the exact enumeration (`lossless`).

Nothing here knows how a model was loaded or how a page draws it; the runtime below it runs the forwards."""
