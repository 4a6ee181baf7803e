"""esbench: declarative, reproducible Elasticsearch benchmarks (ECK + Rally) on Kubernetes."""
