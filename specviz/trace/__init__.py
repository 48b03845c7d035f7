"""What a run leaves behind: its rounds and metrics (`records`), the recorder that fills them (`recording`),
trace files (`files`) and the greedy comparison with the target alone (`compare`)."""
