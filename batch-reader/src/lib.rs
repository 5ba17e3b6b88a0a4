#![doc = include_str!("../README.md")]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod async_reader;
mod backend;
pub mod backends;
mod completion;
mod counters;
mod error;
mod geometry;
mod loom;
mod op;
mod policy;
mod reader;
mod stack;

pub use async_reader::{
    AsyncReader, DEFAULT_QUEUE, DEFAULT_STAGING, ReadFuture, ReadValFuture, RunFuture,
};
pub use backend::{ReadAt, ReadBackend, Report, ScatterOp, read_each_at};
pub use completion::{Completion, Fragment, ReadSummary, Segment, Segments};
pub use counters::Counters;
pub use error::{FaultMapError, GeometryError, PartialRead, ReadErrorKind};
pub use geometry::Geometry;
pub use op::ReadOp;
pub use policy::CoalescePolicy;
pub use reader::{DEFAULT_FRAGMENTS, DEFAULT_WINDOW, Reader};

/// The design notes of the workspace, whose examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/batch-reader.md")]
pub struct DesignDoctests;
