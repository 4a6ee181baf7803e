"""Elasticsearch on the user's machine for `esbench run`: a node from Maven Central on loopback,
its memory cgroup, and the root endpoint module its integ-test distribution lacks."""
