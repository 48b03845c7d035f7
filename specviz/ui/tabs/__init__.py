"""One module per part of the page: `generate` (the form and live runs) and one per tab.

Each has a layout function returning its components by name and a `wire`
function attaching its event functions (see `specviz.ui.events`).
"""
