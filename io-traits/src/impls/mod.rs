//! Implementations, one file per type or bridge.

/// The constructor and accessors every adapter has.
#[cfg(any(feature = "std", feature = "embedded-io"))]
macro_rules! adapter_accessors {
    ($name:ident) => {
        impl<T> $name<T> {
            /// Wraps `inner`.
            ///
            /// # Examples
            ///
            /// ```
            /// # use io_traits::{embedded::*, std_io::*};
            #[doc = concat!("let adapter = ", stringify!($name), "::new(vec![1u8, 2, 3]);")]
            /// assert_eq!(adapter.inner(), &[1, 2, 3]);
            /// ```
            pub const fn new(inner: T) -> Self {
                Self { inner }
            }

            /// Unwraps the writer.
            ///
            /// # Examples
            ///
            /// ```
            /// # use io_traits::{embedded::*, std_io::*};
            #[doc = concat!("let adapter = ", stringify!($name), "::new(vec![1u8, 2, 3]);")]
            /// let writer: Vec<u8> = adapter.into_inner();
            /// assert_eq!(writer, [1, 2, 3]);
            /// ```
            pub fn into_inner(self) -> T {
                self.inner
            }
        }

        impl<T: ?Sized> $name<T> {
            /// The wrapped writer.
            ///
            /// # Examples
            ///
            /// ```
            /// # use io_traits::{embedded::*, std_io::*};
            #[doc = concat!("let adapter = ", stringify!($name), "::new(vec![1u8, 2, 3]);")]
            /// assert_eq!(adapter.inner().len(), 3);
            /// assert_eq!(adapter.inner()[0], 1);
            /// ```
            pub fn inner(&self) -> &T {
                &self.inner
            }

            /// The wrapped writer, mutably.
            ///
            /// # Examples
            ///
            /// ```
            /// # use io_traits::{embedded::*, std_io::*};
            #[doc = concat!("let mut adapter = ", stringify!($name), "::new(vec![1u8, 2]);")]
            /// adapter.inner_mut().push(3);
            /// assert_eq!(adapter.into_inner(), [1, 2, 3]);
            /// ```
            pub fn inner_mut(&mut self) -> &mut T {
                &mut self.inner
            }
        }
    };
}

/// The methods of [`Buffer`](crate::Buffer) that only read or set the view,
/// for buffers that keep the pending message in a byte vector
/// field `inner` and the view's start in `start`.
macro_rules! pending_view {
    () => {
        fn get_data_by_ref(&mut self, len: usize) -> &mut [u8] {
            let n = len.min(self.inner.len());
            self.inner.get_mut(..n).unwrap_or_default()
        }

        fn get_data_by_ref_(&self, len: usize) -> &[u8] {
            let n = len.min(self.inner.len());
            self.inner.get(..n).unwrap_or_default()
        }

        fn len(&self) -> usize {
            self.inner.len()
        }

        fn danger_set_start(&mut self, index: usize) {
            self.start = index;
        }

        fn is_droppable(&self) -> bool {
            true
        }
    };
}

#[cfg(feature = "aead")]
mod aead;
#[cfg(feature = "embedded-io")]
pub(crate) mod embedded_io;
pub(crate) mod fixed;
mod slice;
#[cfg(feature = "std")]
pub(crate) mod std_io;
#[cfg(feature = "alloc")]
pub(crate) mod system_memory;
#[cfg(feature = "alloc")]
mod vec;
