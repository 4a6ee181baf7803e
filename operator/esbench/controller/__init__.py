"""The operator pod: kopf handlers, level-triggered reconcilers for Experiments and sweeps,
the manifests they create, the one decision of when a cluster is ready, and the status."""
