//! profile (stub; being written).
