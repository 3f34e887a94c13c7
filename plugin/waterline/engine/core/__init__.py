"""The engine's pure room: values, no I/O, no JVM, no pyspark or deltalake.

Column names, results, typed states, a feed's status, event-time bookkeeping, key equality over
Arrow, duplicate-key errors, SQL quoting, fault points and the retry of lost commit races.
"""
