"""Results into answers: comparisons, statistics and verdicts, charts and reports. Pure: no
Kubernetes, no Rally."""
