//! The context of an edit (docs/protocol.md 13.5): other live agents' work it does not collide
//! with but that shares a symbol with it (SAME_SYMBOL) or is coupled to it through the call
//! graph (COUPLED). The rule of what counts is [`super::super::conflicts::works_in`]; this
//! gathers the candidates.

use std::collections::HashMap;

use super::super::conflicts::{order_related, works_in, Others, Related, Relation};
use super::super::paths::join_symbol_path;
use super::super::regions::Lines;
use super::super::workmap::Upkeep;
use super::super::{Coord, Result};
use super::EditView;
use crate::store::RangeHit;

impl Coord {
    /// SAME_SYMBOL items for the rows of this file the edit does not meet (`near`), then
    /// COUPLED items for the callers and callees of the innermost touched symbols, each once.
    pub(super) fn related(
        &self,
        others: &Others<'_>,
        edit: &EditView<'_>,
        near: Vec<RangeHit>,
    ) -> Result<Vec<Related>> {
        let mut items = Vec::new();
        let innermost: Vec<_> = edit.touched.iter().filter(|t| t.innermost).collect();
        for touched in &innermost {
            let Some(range) = touched.old_range else {
                continue;
            };
            for row in near
                .iter()
                .filter(|row| works_in(row, range, Some(edit.lines)))
            {
                if !others.against(&row.session_id)? {
                    continue;
                }
                items.push(Related::SameSymbol {
                    symbol_path: join_symbol_path(edit.file, &touched.name),
                    session_id: row.session_id.clone(),
                    intent_id: row.intent_id.clone(),
                });
            }
        }

        // The other sessions' rows of each file a coupled symbol lives in, and that file's
        // lines when a row has regions; this file's rows are `near` (what collides is not
        // context).
        let mut files: HashMap<String, (Vec<RangeHit>, Option<Lines>)> = HashMap::new();
        for touched in &innermost {
            let calls = self.index.callees(edit.file, &touched.name);
            let called_by = self.index.callers(edit.file, &touched.name);
            let coupled = calls
                .into_iter()
                .map(|s| (s, Relation::Calls))
                .chain(called_by.into_iter().map(|s| (s, Relation::CalledBy)));
            for (other_symbol, relation) in coupled {
                let Some((file, name)) = other_symbol.split_once(':') else {
                    continue;
                };
                if !files.contains_key(file) {
                    let entry = if file == edit.file {
                        (near.clone(), Some(edit.lines.clone()))
                    } else {
                        self.rows_elsewhere(others, file)?
                    };
                    files.insert(file.to_owned(), entry);
                }
                let Some((rows, lines)) = files.get(file) else {
                    continue;
                };
                if rows.is_empty() {
                    continue;
                }
                let ranges = self.index.symbol_ranges(file, name);
                for row in rows {
                    if ranges
                        .iter()
                        .any(|&range| works_in(row, range, lines.as_ref()))
                        && others.against(&row.session_id)?
                    {
                        items.push(Related::Coupled {
                            symbol_path: join_symbol_path(edit.file, &touched.name),
                            other_symbol: other_symbol.clone(),
                            relation,
                            session_id: row.session_id.clone(),
                            intent_id: row.intent_id.clone(),
                        });
                    }
                }
            }
        }
        Ok(order_related(items))
    }

    /// Other sessions' intent rows in another file (whose work counts is asked per item),
    /// their regions as lines of its current text, and those lines when a row has regions.
    fn rows_elsewhere(
        &self,
        others: &Others<'_>,
        file: &str,
    ) -> Result<(Vec<RangeHit>, Option<Lines>)> {
        let me = others.me();
        let rows = self.store.read(|r| r.live_ranges_in_file(file, me))?;
        if rows.iter().all(|row| row.regions.is_none()) {
            return Ok((rows, None));
        }
        let text = self
            .index
            .file_text(file)
            .map(|disk| disk.text)
            .unwrap_or_default();
        let rows = self.regions_in(others.vantage(), file, &text, rows, Upkeep::Preview)?;
        Ok((rows, Some(Lines::of(&text))))
    }
}
