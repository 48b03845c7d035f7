"""The classroom: step through real rounds, test the losslessness promise, and play with the theory.

    steps     the walk: a round's nodes (a chain as a tree of one branch), its stops, the moves (pure)
    decisions the numbers of each test, re-drawn u (pure)
    masses    the mass picture of a rejection and what it moved (pure)
    state     where the step view stands (a frozen StepState) and its moves (pure)
    lab       first tokens sampled through `rule.verify` and through deliberately broken rules (torch)
    whatif    the theory's curves, the worked example beside a published claim, the measured point (pure)
    lessons   prepared traces in assets/lessons (pure)
    race      the drafter race: the target alone and four drafters on one prompt through the real decoder (the
              decoder is imported only where a lane runs)

No Gradio here: `specviz.ui.tabs.classroom` wires these to the page and
`specviz.viz.classroom` draws them.
"""
