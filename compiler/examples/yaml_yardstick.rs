//! The yardstick of the speed guard (`scripts/check-speed`): reads a manifest and runs the YAML
//! parser's event loop over it, nothing else. `toolc check` of the same file must stay within a
//! recorded multiple of this, whatever the machine's speed (see BENCHMARKS.md, issue 26).

use saphyr_parser::Parser;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: yaml_yardstick FILE.tools.yaml");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("cannot read {path}: {e}");
            std::process::exit(2);
        }
    };
    let mut events = 0usize;
    let mut parser = Parser::new_from_str(&text);
    while let Some(event) = parser.next_event() {
        if let Err(e) = event {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
        events += 1;
    }
    println!("{events} events");
}
