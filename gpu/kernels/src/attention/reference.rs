//! The plain attention reference kernel (to be written).
