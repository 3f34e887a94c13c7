"""The engine's pure room: no I/O, no JVM, no pyspark or deltalake.

Column names, results, typed states, due-moment decisions, held-file statistics
arithmetic, SQL quoting and the retry of lost commit races.
"""
