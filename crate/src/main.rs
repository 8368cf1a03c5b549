//! `neuronscope` CLI (stub).
fn main() {
    println!("neuronscope");
}
