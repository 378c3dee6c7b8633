//! The format's tally, where the references cover every class's format: its evidence summed per
//! class, per format and answer by answer against the claim, and how far the answers carry each
//! format's own rounding (`crate::sources::format_identity`).

use hspi_datasets::{top_label, NumericFormat};

use crate::dimension_verdict::llr_between;
use crate::features::View;
use crate::model::ClassLabel;
use crate::sources::format_evidence::FormatReferences;
use crate::sources::format_identity::{FormatIdentity, FormatShapes};
use crate::sources::Answer;

pub(super) struct FormatTally {
    /// Which references stand for which format.
    pub(super) references: FormatReferences,
    /// Per class, the summed format evidence that tolerates a change of hardware or build.
    pub(super) per_class: Vec<f64>,
    /// Per answer, the best format off the claim against the best on it, summed: formats that
    /// cannot be told apart among themselves still stand together against the claim.
    pub(super) claim: f64,
    /// Per format (in the references' format order), the summed format evidence.
    per_format: Vec<f64>,
    /// How far the answers carry each format's own rounding.
    shapes: FormatShapes,
    /// Per answer weighed, the format it alone settles (the base for the formats within a
    /// change of engine's reach; None where it settles none): the routes a provider's requests
    /// took.
    pub(super) routes: Vec<Option<NumericFormat>>,
    /// Per route (format group) the answers settled as it, their shapes summed: what the
    /// route's format is, as far as its answers together tell.
    route_shapes: Vec<(NumericFormat, FormatShapes)>,
    /// The answer being weighed: the group it settles, and its own shapes.
    current: Option<(NumericFormat, FormatShapes)>,
}

impl FormatTally {
    pub(super) fn new(references: FormatReferences, classes: usize) -> FormatTally {
        FormatTally {
            per_format: vec![0.0; references.formats().len()],
            shapes: FormatShapes::new(references.formats()),
            references,
            per_class: vec![0.0; classes],
            claim: 0.0,
            routes: Vec::new(),
            route_shapes: Vec::new(),
            current: None,
        }
    }

    /// Add one answer's format evidence per class; `on` marks the classes on the claimed format.
    pub(super) fn add(&mut self, scores: &[f64], classes: &[ClassLabel], on: &[bool]) {
        for (c, v) in self.per_class.iter_mut().zip(scores) {
            *c += v;
        }
        for (t, v) in self
            .per_format
            .iter_mut()
            .zip(self.references.format_scores(scores, classes))
        {
            *t += v;
        }
        if let Some(v) = llr_between(on, scores) {
            self.claim += v;
        }
    }

    /// Note an answer reproduced bit for bit by platforms of `formats`.
    pub(super) fn reproduced(&mut self, formats: &[NumericFormat]) {
        let mut own = FormatShapes::new(self.references.formats());
        for f in formats {
            own.reproduced(*f);
        }
        self.joined(own);
    }

    /// The answer weighed since the last call: its route noted (its shapes joining the
    /// route's), and returned.
    pub(super) fn end_answer(&mut self) -> Option<NumericFormat> {
        let Some((group, own)) = self.current.take() else {
            self.routes.push(None);
            return None;
        };
        self.routes.push(Some(group));
        match self.route_shapes.iter_mut().find(|(g, _)| *g == group) {
            Some((_, shapes)) => shapes.absorb(&own),
            None => self.route_shapes.push((group, own)),
        }
        Some(group)
    }

    /// What the answers settled as `group` are, together.
    pub(super) fn route_identity(&self, group: NumericFormat) -> Option<FormatIdentity> {
        self.route_shapes
            .iter()
            .find(|(g, _)| *g == group)
            .map(|(_, shapes)| shapes.identity(group))
    }

    /// Add an answer's values to the shapes: against each format's reference, both shown as the
    /// endpoint shows its answers.
    pub(super) fn add_shapes(&mut self, answer: &Answer) {
        let views = answer.compared();
        let by_format: Vec<Option<&View>> = self
            .references
            .reference_indices()
            .map(|i| views.get(i).and_then(Option::as_ref))
            .collect();
        let mut own = FormatShapes::new(self.references.formats());
        own.add(&answer.view(), &by_format);
        self.joined(own);
    }

    /// One answer's own shapes: joined to every answer's, and kept until [`Self::end_answer`]
    /// with the route they settle.
    fn joined(&mut self, own: FormatShapes) {
        self.shapes.absorb(&own);
        self.current = own.settled().map(|g| (g, own));
    }

    /// The format the evidence finds best so far.
    pub(super) fn best(&self) -> Option<NumericFormat> {
        top_label(&self.per_format).map(|i| self.references.formats()[i])
    }

    /// What the answers' format is, as far as the evidence and the shapes tell.
    pub(super) fn identity(&self) -> Option<FormatIdentity> {
        Some(self.shapes.identity(self.best()?))
    }

    /// Whether the answers' size fits `format`, known by its size alone.
    /// The format the answers firmly are, or a sibling in its family they firmly show
    /// ([`FormatShapes::firmly`]).
    pub(super) fn firmly(&self) -> Option<NumericFormat> {
        self.shapes.firmly(self.best()?)
    }

    pub(super) fn fits_by_size(&self, format: NumericFormat) -> bool {
        self.shapes.fits_by_size(format)
    }

    pub(super) fn formats(&self) -> Vec<NumericFormat> {
        self.references.formats()
    }
}
