fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let mut files = vec![];
    fn walk(p: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(p).unwrap() { let e = e.unwrap().path(); if e.is_dir() { walk(&e, out) } else if e.extension().map_or(false, |x| x == "cu") { out.push(e) } }
    }
    walk(std::path::Path::new(&dir), &mut files);
    files.sort();
    let t0 = std::time::Instant::now();
    let mut db = warpdrf::source::SourceDb::new();
    let mut s = warpdrf::preprocess::Session::new(Default::default());
    let mut total = 0; let mut frags = std::collections::HashSet::new(); let mut uniq = 0;
    let mut diags = std::collections::BTreeMap::new();
    for f in &files {
        let id = db.load(f).unwrap();
        let u = s.preprocess(&mut db, id);
        for fr in &u.fragments { total += fr.text.len(); if frags.insert(std::sync::Arc::as_ptr(fr) as usize) { uniq += fr.text.len(); } }
        for d in &u.diagnostics { *diags.entry(d.message.clone()).or_insert(0) += 1; }
    }
    println!("{} units, {} bytes total, {} unique fragments {} bytes, {:?}", files.len(), total, frags.len(), uniq, t0.elapsed());
    for (d, n) in &diags { println!("{n:5} {d}"); }
    let mut per: std::collections::BTreeMap<String,(usize,usize)> = Default::default();
    let mut seen = std::collections::HashSet::new();
    for f in &files { let id = db.load(f).unwrap(); let u = s.preprocess(&mut db, id); for fr in &u.fragments { if seen.insert(std::sync::Arc::as_ptr(fr) as usize) { let e = per.entry(db.name(fr.file).to_string()).or_default(); e.0 += 1; e.1 += fr.text.len(); } } }
    let mut v: Vec<_> = per.into_iter().collect(); v.sort_by_key(|x| std::cmp::Reverse(x.1.1));
    for (n, (c, b)) in v.iter().take(15) { println!("{c:4} {b:9} {n}"); }
}
