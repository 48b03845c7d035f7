"""What a run leaves behind: its rounds and metrics (`records`), the recorders that fill them (`recording`,
`tree_recording`), trace files (`files`) and the greedy comparison with the target alone (`compare`)."""
