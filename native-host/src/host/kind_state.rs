//! Each kind's own state inside the host's (`host/kinds/`: how many PDFs the prints made,
//! …), kept under the type the kind declares, so the state names no kind.

use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::fmt::Debug;

/// What a kind keeps: anything it can say in a log line (never a secret).
trait Slot: Any + Send + Debug {}
impl<T: Any + Send + Debug> Slot for T {}

#[derive(Default)]
pub struct KindState(BTreeMap<TypeId, Box<dyn Slot>>);

impl KindState {
    /// The kind's `T`, if it has one yet.
    pub fn peek<T: Any>(&self) -> Option<&T> {
        let slot: &dyn Any = self.0.get(&TypeId::of::<T>())?.as_ref();
        slot.downcast_ref::<T>()
    }

    /// The kind's `T`, its default until first changed.
    pub fn get<T: Any + Send + Debug + Default>(&mut self) -> &mut T {
        let slot: &mut dyn Any = self.0.entry(TypeId::of::<T>()).or_insert_with(|| Box::new(T::default())).as_mut();
        match slot.downcast_mut::<T>() {
            Some(t) => t,
            // Each entry is stored under its own type's id.
            None => unreachable!("a kind's state under another type's id"),
        }
    }
}

impl Debug for KindState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.values()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default)]
    struct Made(u32);
    #[derive(Debug, Default)]
    struct Other(u32);

    #[test]
    fn each_type_keeps_its_own() {
        let mut k = KindState::default();
        k.get::<Made>().0 += 2;
        k.get::<Other>().0 += 5;
        k.get::<Made>().0 += 1;
        assert_eq!((k.get::<Made>().0, k.get::<Other>().0), (3, 5));
        assert_eq!(k.peek::<Made>().map(|m| m.0), Some(3));
        assert!(k.peek::<u8>().is_none(), "nothing of a type never kept");
        let said = format!("{k:?}");
        assert!(said.contains("Made(3)") && said.contains("Other(5)"), "{said}");
    }
}
