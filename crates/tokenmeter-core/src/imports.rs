//! A finished run from a file a user brings: tokenmeter's own run document, the
//! records of an exported plan run on Locust, or a vLLM `bench serve` result. The
//! page's import and `tokenmeter-report` read files through this one door.

use crate::{
    error::Said,
    locust,
    report::{DocumentError, RunDocument},
    vllm,
};

/// `text` as a run document, whichever of the three it is. A document of ours
/// that cannot be read (newer, damaged) says so rather than being tried as
/// another tool's; other text is tried as a vLLM result, whose reader says what
/// it lacks.
pub fn read_run(text: &str) -> Result<RunDocument, Said> {
    if locust::is_locust_records(text) {
        return locust::import(text);
    }
    match RunDocument::from_json(text) {
        Ok(document) => Ok(document),
        Err(DocumentError::NotJson(_) | DocumentError::NotOurs) => vllm::import(text),
        Err(error) => Err(error.said()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_goes_to_its_reader_and_ours_is_never_tried_as_another() {
        let newer = read_run(r#"{"schema": 9, "levels": []}"#).unwrap_err();
        assert!(newer.en.contains("newer tokenmeter"), "{}", newer.en);
        let damaged = read_run(r#"{"schema": 1, "levels": 3}"#).unwrap_err();
        assert!(damaged.en.contains("damaged"), "{}", damaged.en);
        // Not ours: the vLLM reader's words, not the run document's.
        let other = read_run(r#"{"date": "x"}"#).unwrap_err();
        assert!(other.en.contains("neither"), "{}", other.en);
        assert!(!other.zh.is_empty());
    }
}
