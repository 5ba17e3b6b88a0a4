//! What every pool type forwards to its [`Producer`](crate::producer::Producer)
//! unchanged, written once.

/// Inside an `impl Buffer for` block of a type with a `producer` field: the
/// methods whose meaning does not depend on where the pool memory came from.
macro_rules! forward_buffer_methods {
    () => {
        #[inline]
        fn try_get_writable(&mut self, len: usize) -> Result<&mut [u8], BufferError> {
            self.producer.try_get_writable(len)
        }

        #[inline]
        fn get_data_owned(&mut self) -> Slice<M> {
            self.producer.get_data_owned()
        }

        fn get_data_by_ref(&mut self, len: usize) -> &mut [u8] {
            let bytes = self.producer.pending_mut();
            let n = len.min(bytes.len());
            bytes.get_mut(..n).unwrap_or_default()
        }

        fn get_data_by_ref_(&self, len: usize) -> &[u8] {
            let bytes = self.producer.pending();
            bytes.get(..len.min(bytes.len())).unwrap_or_default()
        }

        fn len(&self) -> usize {
            self.producer.len()
        }

        fn danger_set_start(&mut self, index: usize) {
            self.producer.set_view(index);
        }
    };
}

/// `AsRef<[u8]>` and `AsMut<[u8]>` for a pool type with a `producer` field:
/// the pending message from the start set by `danger_set_start` on.
macro_rules! forward_views {
    ([$($generics:tt)*] $pool:ty) => {
        /// The pending message from the start set by
        /// [`danger_set_start`](Buffer::danger_set_start) on.
        impl<$($generics)*> AsRef<[u8]> for $pool {
            fn as_ref(&self) -> &[u8] {
                self.producer.view()
            }
        }

        /// The pending message from the start set by
        /// [`danger_set_start`](Buffer::danger_set_start) on.
        impl<$($generics)*> AsMut<[u8]> for $pool {
            fn as_mut(&mut self) -> &mut [u8] {
                self.producer.view_mut()
            }
        }

        /// The buffer AEAD ciphers encrypt and decrypt in place (feature
        /// `aead`): the pending message from the start set by
        /// [`danger_set_start`](Buffer::danger_set_start) on, as the
        /// `AsRef`/`AsMut` view. `extend_from_slice` fails (with
        /// `aead::Error`) where `try_get_writable` would.
        #[cfg(feature = "aead")]
        impl<$($generics)*> aead::Buffer for $pool {
            fn extend_from_slice(&mut self, other: &[u8]) -> aead::Result<()> {
                let bytes = self.producer.try_get_writable(other.len());
                bytes.map_err(|_| aead::Error)?.copy_from_slice(other);
                Ok(())
            }

            fn truncate(&mut self, len: usize) {
                self.producer.truncate_view(len);
            }
        }
    };
}
