// Legacy-mangled Rust names for the demangler's test (internal/symbolize):
// closures, generics, trait objects, const generics, and the std frames a
// backtrace and a panic go through, instantiated in this crate.
use std::collections::HashMap;
use std::fmt::Debug;

trait Shape {
    fn area(&self) -> f64;
}

struct Sq<T>(T);

impl<T: Into<f64> + Copy> Shape for Sq<T> {
    fn area(&self) -> f64 {
        let v: f64 = self.0.into();
        v * v
    }
}

#[inline(never)]
fn apply<F: Fn(u64) -> u64>(f: F, n: u64) -> u64 {
    (0..n).map(|i| f(i)).sum()
}

#[inline(never)]
fn show<T: Debug, const N: usize>(xs: [T; N]) -> String {
    format!("{:?}", xs)
}

fn main() {
    let k = std::env::args().count() as u64;
    let total = apply(|x| x * k + 1, 1000);
    let shapes: Vec<Box<dyn Shape>> = vec![Box::new(Sq(2u8)), Box::new(Sq(3.0f32))];
    let area: f64 = shapes.iter().map(|s| s.area()).sum();
    let mut m: HashMap<&str, Vec<(u8, char)>> = HashMap::new();
    m.entry("a").or_default().push((1, 'x'));
    let r = std::panic::catch_unwind(|| if k > 100 { panic!("too many") } else { 3 });
    let worker = std::thread::spawn(move || apply(|x| x ^ k, 10));
    let bt = std::backtrace::Backtrace::force_capture();
    println!(
        "{} {} {:?} {} {:?} {:?} {}",
        total,
        area,
        m,
        show([1u16, 2, 3]),
        r.ok(),
        worker.join().ok(),
        !bt.to_string().is_empty()
    );
}
