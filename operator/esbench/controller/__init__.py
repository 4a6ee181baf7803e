"""The operator pod: kopf handlers, level-triggered reconcilers for Experiments, sweeps and
schedules, the Kubernetes client and the results-store writer. What they decide comes from
esbench.planning."""
