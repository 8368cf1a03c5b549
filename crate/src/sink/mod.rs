//! Sinks: Arrow IPC and Parquet (stub).
