"""Local processes a developer or a test starts on this machine.

A Spark standalone cluster and Spark Connect server (`cluster`), a KRaft Kafka broker
(`kafka_broker`) and the process-group helpers they share (`processes`): JVM daemons on
127.0.0.1 that `waterline spark|kafka start|stop|status`, the stream demo, the tests and the
benchmarks start and stop. The engine never imports this package (the layers contract in
pyproject.toml keeps it above the engine): a release runs against whatever Spark and Kafka
its configuration names, never against processes this package manages.
"""
