//! Which differences are accepted: deliberate ones (`OPTIONAL_HERE`) and known drift
//! (`KNOWN_DRIFT`); `judge` fails every other difference and every entry that matches nothing.

use crate::compare::{Aspect, Difference};

/// A difference the test accepts. Matched on place, aspect and both values, so a change on either
/// side brings it back as a failure.
struct Allowed {
    place: &'static str,
    aspect: Aspect,
    project: &'static str,
    official: &'static str,
    why: &'static str,
}

/// Arguments HBase leaves without a requiredness keyword, which real clients omit. The Rust
/// generator would make them required, so the project says `optional` (each must differ from
/// HBase's IDL in exactly that) and the emulator decodes these methods by hand
/// (src/emulator/dispatch) to serve such requests as HBase does. Place, then why.
const OPTIONAL_HERE: &[(&str, &str)] = &[
    (
        "THBaseService.checkAndPut argument 5",
        "clients omit `value` to require the cell absent",
    ),
    (
        "THBaseService.checkAndDelete argument 5",
        "clients omit `value` to require the cell absent",
    ),
    (
        "THBaseService.checkAndMutate argument 6",
        "clients omit `value` to require the cell absent",
    ),
    (
        "THBaseService.getScannerRows argument 2",
        "clients omit `numRows`; HBase's default is 1",
    ),
    (
        "THBaseService.getScannerResults argument 3",
        "clients omit `numRows`; HBase's default is 1",
    ),
    (
        "THBaseService.getRegionLocation argument 3",
        "clients omit `reload`; HBase reads false",
    ),
];

/// Real drift whose fix reaches outside thrift/ and src/thrift/. Listed so that any *new* drift
/// still fails; delete an entry together with its fix.
const KNOWN_DRIFT: &[Allowed] = &[];

impl Allowed {
    fn matches(&self, d: &Difference) -> bool {
        self.place == d.place
            && self.aspect == d.aspect
            && self.project == d.project
            && self.official == d.official
    }
}

/// Splits differences into failures and accepted ones; an allowance that matched nothing is a
/// failure as well, so the lists shrink when the IDLs converge.
pub(crate) fn judge(differences: &[Difference]) -> (Vec<String>, Vec<String>) {
    let optional_here = OPTIONAL_HERE.iter().map(|&(place, why)| {
        let (project, official) = ("optional", "default");
        let allowed = Allowed {
            place,
            aspect: Aspect::Requiredness,
            project,
            official,
            why,
        };
        ("deliberate", allowed)
    });
    let known = KNOWN_DRIFT
        .iter()
        .map(|a| ("known drift", Allowed { ..*a }));
    let allowed: Vec<(&str, Allowed)> = optional_here.chain(known).collect();
    let (mut failures, mut accepted) = (Vec::new(), Vec::new());
    for d in differences {
        match allowed.iter().find(|(_, a)| a.matches(d)) {
            Some((label, a)) => accepted.push(format!("{label}: {d} ({})", a.why)),
            None => failures.push(d.to_string()),
        }
    }
    for (label, a) in allowed
        .iter()
        .filter(|(_, a)| !differences.iter().any(|d| a.matches(d)))
    {
        failures.push(format!(
            "{label} `{}` ({}: project `{}`, HBase `{}`) no longer occurs: remove it from the list",
            a.place, a.aspect, a.project, a.official
        ));
    }
    (failures, accepted)
}
