//! The model's own evidence (`crate::sources::model_evidence`): how far the answer lies from the nearest
//! reference of the claimed model, its values against the references' shown the same way, or
//! its text against their tokens. It weighs every answer, reproduced or not.

use super::{Answer, Context, EvidenceSource, Weighing};
use crate::features::View;
use crate::sources::model_evidence::distance;

pub struct ModelLikelihood;

impl EvidenceSource for ModelLikelihood {
    fn name(&self) -> &'static str {
        "model"
    }

    fn weigh(&mut self, answer: &Answer, _cx: &Context) -> Weighing {
        let refs: Vec<&View> = answer.compared().iter().flatten().collect();
        Weighing::Model(distance(&answer.view(), &refs))
    }
}
