//! A workflow's child cards: grouped by phase and label, each with its usage, the run's card with the sum;
//! live and replayed from the session log.
