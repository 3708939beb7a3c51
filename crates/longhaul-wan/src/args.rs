//! Options of the form `--name value` (every option takes a value; some may repeat).
//! Errors are one line for the caller (the Python control plane) to show.

use std::collections::HashMap;
use std::str::FromStr;

pub struct Args {
    values: HashMap<String, Vec<String>>,
}

impl Args {
    pub fn parse(argv: &[String]) -> Result<Args, String> {
        let mut values: HashMap<String, Vec<String>> = HashMap::new();
        let mut it = argv.iter();
        while let Some(key) = it.next() {
            let name = key.strip_prefix("--").ok_or_else(|| format!("unexpected argument '{key}'"))?;
            let value = it.next().ok_or_else(|| format!("option --{name} needs a value"))?;
            values.entry(name.to_string()).or_default().push(value.clone());
        }
        Ok(Args { values })
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).and_then(|v| v.last()).map(String::as_str)
    }

    pub fn all(&self, name: &str) -> Vec<&str> {
        self.values.get(name).map(|v| v.iter().map(String::as_str).collect()).unwrap_or_default()
    }

    pub fn required(&self, name: &str) -> Result<&str, String> {
        self.get(name).ok_or_else(|| format!("option --{name} is required"))
    }

    pub fn num<T: FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.get(name) {
            None => Ok(default),
            Some(text) => text.parse().map_err(|_| format!("--{name}: '{text}' is not a valid number")),
        }
    }
}

/// `key=value,key=value` (the per-direction link spec) into pairs.
pub fn parse_kv(spec: &str) -> Result<HashMap<String, String>, String> {
    let mut out = HashMap::new();
    for part in spec.split(',').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').ok_or_else(|| format!("'{part}' is not key=value"))?;
        out.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn repeated_and_numeric_options() {
        let a = Args::parse(&s(&["--a", "x", "--a", "y", "--n", "5"])).unwrap();
        assert_eq!(a.all("a"), vec!["x", "y"]);
        assert_eq!(a.num("n", 0u32).unwrap(), 5);
        assert_eq!(a.num("m", 7u32).unwrap(), 7);
        assert!(a.num::<u32>("a", 0).is_err());
    }

    #[test]
    fn bad_command_lines_are_errors_not_panics() {
        assert!(Args::parse(&s(&["--a"])).is_err());
        assert!(Args::parse(&s(&["a"])).is_err());
        assert!(parse_kv("delay_ns").is_err());
        assert_eq!(parse_kv("a=1,b=2").unwrap()["b"], "2");
    }
}
