use crate::record::{Outputs, Record};

/// Outputs per record up to which every value gets its own column.
const WIDE_LIMIT: usize = 64;
const TOP: usize = 16;

#[derive(Debug, Clone, PartialEq)]
pub enum ColumnData {
    Str(Vec<String>),
    I64(Vec<i64>),
    F32(Vec<f32>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub data: ColumnData,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub rows: usize,
    pub columns: Vec<Column>,
}

fn values(r: &Record) -> Vec<f32> {
    match &r.outputs {
        Outputs::Logits { values } => values.to_f32(),
        Outputs::Tokens { ids } => ids.iter().map(|i| *i as f32).collect(),
        Outputs::Completion { steps, .. } => steps
            .iter()
            .map(|s| s.logprob.as_ref().map_or(f32::NAN, |l| l.value()))
            .collect(),
    }
}

impl Table {
    pub fn from_records(records: &[Record]) -> Table {
        let outputs: Vec<Vec<f32>> = records.iter().map(values).collect();
        let width = outputs.iter().map(Vec::len).max().unwrap_or(0);
        let mut columns = vec![
            Column {
                name: "probe_id".into(),
                data: ColumnData::Str(records.iter().map(|r| r.probe_id.clone()).collect()),
            },
            Column {
                name: "target".into(),
                data: ColumnData::Str(records.iter().map(|r| r.target.clone()).collect()),
            },
            Column {
                name: "platform".into(),
                data: ColumnData::Str(
                    records
                        .iter()
                        .map(|r| {
                            r.platform
                                .as_ref()
                                .map(|p| p.to_string())
                                .unwrap_or_default()
                        })
                        .collect(),
                ),
            },
            Column {
                name: "timing_us".into(),
                data: ColumnData::I64(records.iter().map(|r| r.timing_us as i64).collect()),
            },
            Column {
                name: "n_outputs".into(),
                data: ColumnData::I64(outputs.iter().map(|o| o.len() as i64).collect()),
            },
            Column {
                name: "argmax".into(),
                data: ColumnData::I64(
                    outputs
                        .iter()
                        .map(|o| ranked(o).first().map_or(-1, |i| *i as i64))
                        .collect(),
                ),
            },
        ];
        if width <= WIDE_LIMIT {
            for i in 0..width {
                let at = |o: &Vec<f32>| o.get(i).copied().unwrap_or(f32::NAN);
                columns.push(Column {
                    name: format!("out_{i}"),
                    data: ColumnData::F32(outputs.iter().map(at).collect()),
                });
                columns.push(Column {
                    name: format!("out_{i}_bits"),
                    data: ColumnData::I64(outputs.iter().map(|o| at(o).to_bits() as i64).collect()),
                });
            }
        } else {
            let tops: Vec<Vec<usize>> = outputs.iter().map(|o| ranked(o)).collect();
            for j in 0..TOP {
                let idx = |t: &Vec<usize>| t.get(j).map_or(-1, |i| *i as i64);
                let val = |(o, t): (&Vec<f32>, &Vec<usize>)| t.get(j).map_or(f32::NAN, |i| o[*i]);
                columns.push(Column {
                    name: format!("top{j}_index"),
                    data: ColumnData::I64(tops.iter().map(idx).collect()),
                });
                columns.push(Column {
                    name: format!("top{j}_value"),
                    data: ColumnData::F32(outputs.iter().zip(&tops).map(val).collect()),
                });
                columns.push(Column {
                    name: format!("top{j}_bits"),
                    data: ColumnData::I64(
                        outputs
                            .iter()
                            .zip(&tops)
                            .map(|x| val(x).to_bits() as i64)
                            .collect(),
                    ),
                });
            }
        }
        Table {
            rows: records.len(),
            columns,
        }
    }
}

/// Indices of the `TOP` largest values, largest first, ties by index.
fn ranked(values: &[f32]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|a, b| values[*b].total_cmp(&values[*a]).then(a.cmp(b)));
    idx.truncate(TOP);
    idx
}
