//! A run's course: its levels in the order they are measured, each with how it
//! sends. A ladder's levels (every pass of a repeated ladder; each target of an
//! A/B plan in turn, or all of them at once), an open-loop level of arrivals and a
//! level bounded by time are known before the run starts ([`Schedule::planned`]);
//! an SLO search decides each probe from the outcome of the one before. The engine
//! asks for the next level ([`Schedule::next_level`]), measures it, and says whether a
//! probe met the SLO ([`Schedule::observe`]): the arithmetic of passes, targets,
//! probes and caps lives here, tested natively, and the engine only sends.

use crate::{
    condition::RunCondition,
    plan::{arrival_offsets_ms, requests_per_probe, AbOrder, LoadMode, Plan, MAX_REQUESTS_PER_RUN},
    search::{SearchOutcome, SloSearch},
};

/// How a level sends its requests.
#[derive(Clone, Debug, PartialEq)]
pub enum Sending {
    /// Lanes that each send their next request when their previous one ended
    /// (`concurrency` of them, per target when every target is measured at once),
    /// until `limit` requests were sent (an equal share per target) or
    /// `duration_ms` passed.
    ClosedLoop {
        /// Requests the level sends in all.
        limit: u32,
        /// How long the level may go, ms; absent: until `limit` were sent.
        duration_ms: Option<f64>,
    },
    /// One request at each offset from the level's start, ms.
    OpenLoop {
        /// When each request goes, ms from the level's start.
        offsets_ms: Vec<f64>,
    },
}

/// One level of a run, as the engine measures it.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelPlan {
    /// Its place in the run: the live view's row and its records' level.
    pub index: usize,
    /// Streams at once; 0 for open-loop arrivals.
    pub concurrency: u32,
    /// Requests planned; 0 for a level bounded by time.
    pub n_planned: u32,
    /// The pass of a repeated ladder it belongs to (0 for the first).
    pub pass: u32,
    /// The target of an A/B plan it measures (0 is the plan's own endpoint);
    /// `None`: every target at once, their requests interleaved.
    pub target: Option<usize>,
    pub sending: Sending,
}

impl LevelPlan {
    /// The target its records carry (an interleaved level's lanes set theirs).
    pub fn target_label(&self) -> u32 {
        self.target.unwrap_or(0) as u32
    }

    /// A level bounded by time that sent `n_sent`, as many as a run may: it
    /// stopped early, and the run says so.
    pub fn cap_reached(&self, n_sent: u32) -> Option<RunCondition> {
        match self.sending {
            Sending::ClosedLoop {
                limit,
                duration_ms: Some(_),
            } if n_sent >= limit => Some(RunCondition::RequestCapReached {
                concurrency: self.concurrency,
                limit,
            }),
            _ => None,
        }
    }
}

/// An SLO search under way: the search, the requests each probe sends, and the
/// probe whose outcome is awaited.
#[derive(Clone, Debug)]
struct Probing {
    search: SloSearch,
    requests_per_probe: u32,
    awaiting: Option<u32>,
}

/// The levels of a run, given one at a time.
#[derive(Clone, Debug)]
pub struct Schedule {
    planned: Vec<LevelPlan>,
    probing: Option<Probing>,
    /// Levels given so far.
    n_given: usize,
}

impl Schedule {
    // Long: every load mode's levels, an arm each.
    /// The course of `plan`, from its first level.
    pub fn new(plan: &Plan) -> Schedule {
        let closed = |index, concurrency, n_planned, pass, target| LevelPlan {
            index,
            concurrency,
            n_planned,
            pass,
            target,
            sending: Sending::ClosedLoop {
                limit: n_planned,
                duration_ms: None,
            },
        };
        let mut probing = None;
        let planned = match &plan.load {
            LoadMode::Ladder {
                levels,
                requests_per_level,
            } => {
                let n_targets = plan.n_targets();
                // Each level for every target in turn (A1, B1, A2, B2, …), or once
                // for all of them, each sending its share of the level's requests.
                let (per_level, n_planned) = match plan.ab_order {
                    AbOrder::Levels => (n_targets, *requests_per_level),
                    AbOrder::Requests => (1, requests_per_level.saturating_mul(n_targets as u32)),
                };
                let interleaved = per_level == 1 && n_targets > 1;
                let mut planned = Vec::new();
                for pass in 0..plan.repeat.max(1) {
                    for &concurrency in levels {
                        for turn in 0..per_level {
                            let target = (!interleaved).then_some(turn);
                            planned.push(closed(
                                planned.len(),
                                concurrency,
                                n_planned,
                                pass,
                                target,
                            ));
                        }
                    }
                }
                planned
            }
            LoadMode::Arrivals {
                rate_rps,
                poisson,
                n_requests,
                seed,
            } => vec![LevelPlan {
                index: 0,
                concurrency: 0,
                n_planned: *n_requests,
                pass: 0,
                target: Some(0),
                sending: Sending::OpenLoop {
                    offsets_ms: arrival_offsets_ms(*rate_rps, *poisson, *n_requests, *seed),
                },
            }],
            LoadMode::Duration {
                concurrency,
                seconds,
            } => vec![LevelPlan {
                index: 0,
                concurrency: *concurrency,
                n_planned: 0,
                pass: 0,
                target: Some(0),
                sending: Sending::ClosedLoop {
                    limit: MAX_REQUESTS_PER_RUN,
                    duration_ms: Some(seconds * 1e3),
                },
            }],
            LoadMode::SloSearch {
                max_concurrency,
                requests_per_probe,
            } => {
                probing = Some(Probing {
                    search: SloSearch::new(1, *max_concurrency),
                    requests_per_probe: *requests_per_probe,
                    awaiting: None,
                });
                Vec::new()
            }
        };
        Schedule {
            planned,
            probing,
            n_given: 0,
        }
    }

    /// The levels known before the run (none for an SLO search, whose probes are
    /// decided as it goes).
    pub fn planned(&self) -> &[LevelPlan] {
        &self.planned
    }

    /// The concurrency the warm-up requests are recorded at: the first level's
    /// (an open-loop level's and a search's first probe's, 1).
    pub fn warmup_concurrency(&self) -> u32 {
        self.planned.first().map_or(1, |l| l.concurrency.max(1))
    }

    /// Whether each level is a probe whose outcome [`Schedule::observe`] must be
    /// told before the next is given.
    pub fn is_search(&self) -> bool {
        self.probing.is_some()
    }

    /// The next level, `None` when the run is over (for a search: also while the
    /// last probe's outcome is not yet known).
    pub fn next_level(&mut self) -> Option<LevelPlan> {
        let index = self.n_given;
        let level = match &mut self.probing {
            None => self.planned.get(index).cloned()?,
            Some(probing) => {
                if probing.awaiting.is_some() {
                    return None;
                }
                let concurrency = probing.search.next()?;
                probing.awaiting = Some(concurrency);
                let n_planned = requests_per_probe(concurrency, probing.requests_per_probe);
                LevelPlan {
                    index,
                    concurrency,
                    n_planned,
                    pass: 0,
                    target: Some(0),
                    sending: Sending::ClosedLoop {
                        limit: n_planned,
                        duration_ms: None,
                    },
                }
            }
        };
        self.n_given += 1;
        Some(level)
    }

    /// Whether the probe just measured met the SLO (as the finished run will judge
    /// its level). Nothing for a run that is not a search.
    pub fn observe(&mut self, met: bool) {
        if let Some(probing) = &mut self.probing {
            if let Some(concurrency) = probing.awaiting.take() {
                probing.search.observe(concurrency, met);
            }
        }
    }

    /// What a search found, from the probes observed.
    pub fn outcome(&self) -> Option<SearchOutcome> {
        self.probing.as_ref().map(|p| p.search.outcome())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::TargetSpec;

    fn plan(load: LoadMode) -> Plan {
        let mut plan = Plan::default_for_simulator("http://127.0.0.1:8000/v1");
        plan.load = load;
        plan
    }

    fn ladder(levels: &[u32], requests_per_level: u32) -> Plan {
        plan(LoadMode::Ladder {
            levels: levels.to_vec(),
            requests_per_level,
        })
    }

    fn with_targets(mut plan: Plan, n_others: usize, order: AbOrder) -> Plan {
        plan.targets = (0..n_others)
            .map(|i| TargetSpec {
                base_url: format!("http://127.0.0.1:{}/v1", 8001 + i),
                model: "m".into(),
                extra_body: Default::default(),
            })
            .collect();
        plan.ab_order = order;
        plan
    }

    /// Every level the schedule gives, observing nothing.
    fn all(plan: &Plan) -> Vec<LevelPlan> {
        let mut schedule = Schedule::new(plan);
        let given: Vec<LevelPlan> = std::iter::from_fn(|| schedule.next_level()).collect();
        assert_eq!(
            given,
            schedule.planned(),
            "a planned run gives what it planned"
        );
        given
    }

    /// `(concurrency, n_planned, pass, target)` of each level.
    fn shape(levels: &[LevelPlan]) -> Vec<(u32, u32, u32, Option<usize>)> {
        levels
            .iter()
            .map(|l| (l.concurrency, l.n_planned, l.pass, l.target))
            .collect()
    }

    #[test]
    fn a_ladder_runs_its_levels_in_order_and_each_pass_again() {
        let levels = all(&ladder(&[1, 2, 4], 8));
        assert_eq!(
            shape(&levels),
            [(1, 8, 0, Some(0)), (2, 8, 0, Some(0)), (4, 8, 0, Some(0))]
        );
        assert!(levels.iter().enumerate().all(|(i, l)| l.index == i));
        assert!(levels.iter().all(|l| l.sending
            == Sending::ClosedLoop {
                limit: 8,
                duration_ms: None
            }));
        let mut repeated = ladder(&[1, 2], 4);
        repeated.repeat = 3;
        let passes: Vec<(u32, u32)> = all(&repeated)
            .iter()
            .map(|l| (l.pass, l.concurrency))
            .collect();
        assert_eq!(passes, [(0, 1), (0, 2), (1, 1), (1, 2), (2, 1), (2, 2)]);
        assert_eq!(Schedule::new(&repeated).warmup_concurrency(), 1);
        assert_eq!(Schedule::new(&ladder(&[4, 8], 1)).warmup_concurrency(), 4);
    }

    #[test]
    fn an_ab_ladder_takes_each_level_for_every_target_in_turn_or_all_at_once() {
        let mut in_turn = with_targets(ladder(&[1, 2], 6), 2, AbOrder::Levels);
        in_turn.repeat = 2;
        assert_eq!(
            shape(&all(&in_turn)),
            [
                (1, 6, 0, Some(0)),
                (1, 6, 0, Some(1)),
                (1, 6, 0, Some(2)),
                (2, 6, 0, Some(0)),
                (2, 6, 0, Some(1)),
                (2, 6, 0, Some(2)),
                (1, 6, 1, Some(0)),
                (1, 6, 1, Some(1)),
                (1, 6, 1, Some(2)),
                (2, 6, 1, Some(0)),
                (2, 6, 1, Some(1)),
                (2, 6, 1, Some(2)),
            ]
        );
        // All at once: one level per concurrency, each target its share.
        let at_once = all(&with_targets(ladder(&[1, 2], 6), 1, AbOrder::Requests));
        assert_eq!(shape(&at_once), [(1, 12, 0, None), (2, 12, 0, None)]);
        assert_eq!(at_once[0].target_label(), 0);
        assert_eq!(
            at_once[1].sending,
            Sending::ClosedLoop {
                limit: 12,
                duration_ms: None
            }
        );
        // One target and "all at once" is one target.
        let alone = all(&plan_with_order(ladder(&[3], 5), AbOrder::Requests));
        assert_eq!(shape(&alone), [(3, 5, 0, Some(0))]);
    }

    fn plan_with_order(mut plan: Plan, order: AbOrder) -> Plan {
        plan.ab_order = order;
        plan
    }

    #[test]
    fn arrivals_are_one_open_loop_level_at_the_plan_s_instants() {
        let arrivals = plan(LoadMode::Arrivals {
            rate_rps: 4.0,
            poisson: false,
            n_requests: 5,
            seed: 7,
        });
        let levels = all(&arrivals);
        assert_eq!(shape(&levels), [(0, 5, 0, Some(0))]);
        assert_eq!(
            levels[0].sending,
            Sending::OpenLoop {
                offsets_ms: arrival_offsets_ms(4.0, false, 5, 7)
            }
        );
        assert_eq!(Schedule::new(&arrivals).warmup_concurrency(), 1);
        assert_eq!(levels[0].cap_reached(5), None, "not bounded by time");
    }

    #[test]
    fn a_level_bounded_by_time_says_when_it_reached_the_run_s_cap() {
        let duration = plan(LoadMode::Duration {
            concurrency: 8,
            seconds: 30.0,
        });
        let levels = all(&duration);
        assert_eq!(shape(&levels), [(8, 0, 0, Some(0))]);
        assert_eq!(
            levels[0].sending,
            Sending::ClosedLoop {
                limit: MAX_REQUESTS_PER_RUN,
                duration_ms: Some(30_000.0)
            }
        );
        assert_eq!(levels[0].cap_reached(MAX_REQUESTS_PER_RUN - 1), None);
        assert_eq!(
            levels[0].cap_reached(MAX_REQUESTS_PER_RUN),
            Some(RunCondition::RequestCapReached {
                concurrency: 8,
                limit: MAX_REQUESTS_PER_RUN
            })
        );
        assert_eq!(
            all(&ladder(&[1], 3))[0].cap_reached(3),
            None,
            "a ladder's level ends by count"
        );
    }

    #[test]
    fn an_slo_search_probes_from_the_outcome_of_the_last_probe() {
        let search = plan(LoadMode::SloSearch {
            max_concurrency: 64,
            requests_per_probe: 10,
        });
        let mut schedule = Schedule::new(&search);
        assert!(schedule.is_search() && schedule.planned().is_empty());
        assert_eq!(schedule.warmup_concurrency(), 1);
        // A server within its SLO up to 12 streams.
        let mut probed = Vec::new();
        while let Some(level) = schedule.next_level() {
            assert_eq!(level.index, probed.len());
            assert_eq!(
                schedule.next_level(),
                None,
                "no next probe before this one's outcome"
            );
            assert_eq!(level.n_planned, requests_per_probe(level.concurrency, 10));
            probed.push(level.concurrency);
            schedule.observe(level.concurrency <= 12);
        }
        assert_eq!(probed, [1, 2, 4, 8, 16, 12, 14, 13]);
        let outcome = schedule.outcome().unwrap();
        assert_eq!(
            (outcome.highest_met, outcome.lowest_broken),
            (Some(12), Some(13))
        );
        assert_eq!(outcome.probes.len(), probed.len());
        assert!(Schedule::new(&ladder(&[1], 1)).outcome().is_none());
    }

    #[test]
    fn a_search_that_breaks_at_once_ends_there() {
        let mut schedule = Schedule::new(&plan(LoadMode::SloSearch {
            max_concurrency: 8,
            requests_per_probe: 4,
        }));
        let first = schedule.next_level().unwrap();
        assert_eq!((first.concurrency, first.n_planned), (1, 4));
        schedule.observe(false);
        assert_eq!(schedule.next_level(), None);
        assert_eq!(schedule.outcome().unwrap().highest_met, None);
    }
}
