//! Managed local servers.
