"""What a sweep or a schedule is to run, and what its runs say: pure, shared by the operator pod
and the user's machine (local mode). The plan of a sweep (grid), its state machine (sweepstate),
a schedule's (schedulestate), the manifests they produce, the names of every child, the one
decision of when a cluster is ready, and the status summaries. No Kubernetes client, no I/O."""
