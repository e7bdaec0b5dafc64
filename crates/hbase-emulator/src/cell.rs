//! One cell version as reads return it: what the store keeps and the filters judge, so that
//! neither needs the other to name it.

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    pub family: Vec<u8>,
    pub qualifier: Vec<u8>,
    pub timestamp: i64,
    pub value: Vec<u8>,
}
