package main

// replicaUsage documents --replica, the same on every face.
const replicaUsage = "base URL of another replica of the same API (one store behind them), beside --target or the config's base_url; repeatable; replaces the config's replicas. The replicas/ cases spread keys over them; chaos and load balance over them"
