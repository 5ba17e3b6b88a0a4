//! The reader's routes against each other: the direct, in-order, scattered
//! and single-op routes give the general route's completions, counters and
//! backend calls, also for backends that break the contract.

mod cases;
mod in_order;
mod routes;
mod scripted;
