//! inventory (stub; being written).
