// SPDX-License-Identifier: GPL-2.0

//! KTAP output, and the differential log (the format of tests/lib/ktap.h).

use std::fs::{File, OpenOptions};
use std::io::Write;

pub struct Report {
    n: u32,
    plan: u32,
    failed: u32,
    observe: Option<File>,
}

fn errno_name(e: i32) -> String {
    std::io::Error::from_raw_os_error(e).to_string()
}

impl Report {
    pub fn new() -> Self {
        let observe = std::env::var_os("UCMA_OBSERVE")
            .and_then(|p| OpenOptions::new().create(true).append(true).open(p).ok());
        Report {
            n: 0,
            plan: 0,
            failed: 0,
            observe,
        }
    }

    /// The version line and the plan, before the first case.
    pub fn header(&mut self, plan: u32) {
        self.plan = plan;
        println!("KTAP version 1");
        println!("1..{plan}");
    }

    fn log(&mut self, line: String) {
        if let Some(f) = self.observe.as_mut() {
            let _ = writeln!(f, "{line}");
        }
    }

    /// One case: passed or not, with the reason when not.
    pub fn check(&mut self, name: &str, ok: bool, why: &str) {
        self.n += 1;
        self.log(format!("{name} pass {}", u8::from(ok)));
        if ok {
            println!("ok {} {name}", self.n);
        } else {
            self.failed += 1;
            println!("not ok {} {name} # {why}", self.n);
        }
    }

    pub fn fail(&mut self, name: &str, why: &str) {
        self.check(name, false, why);
    }

    /// A case that expects a command to fail with `want`.
    pub fn errno(&mut self, name: &str, got: Result<(), i32>, want: i32) {
        let (ret, e) = match got {
            Ok(()) => (0, 0),
            Err(e) => (-1, e),
        };
        self.log(format!("{name} rc {ret} {e}"));
        let why = format!(
            "got ret {ret} errno {e} ({}), want errno {want} ({})",
            errno_name(e),
            errno_name(want)
        );
        self.check(name, got == Err(want), &why);
    }

    /// Prints the summary; the exit status: 1 if a case failed or the
    /// count of cases is not the plan.
    pub fn finish(&self) -> i32 {
        println!(
            "# {} passed, {} failed, 0 skipped",
            self.n - self.failed,
            self.failed
        );
        if self.n != self.plan {
            println!(
                "# plan mismatch: planned {} cases, ran {}",
                self.plan, self.n
            );
            return 1;
        }
        i32::from(self.failed != 0)
    }
}
