"""Every text of the report's own sections (:mod:`ragexam.report.sections`) in English and Korean: the report's
part of the one catalogue (:mod:`ragexam.report.i18n`; ``ragexam serve`` adds its own, :mod:`ragexam.serve.strings`).

``STRINGS[key] = (English, 한국어)``, or ``(English, 한국어, English when n is 1)``.  A text is HTML written here: it
may hold ``<b>``, ``<code>``, ``<i>``; write ``&lt;`` for ``<``.  ``{name}`` takes a value the section passes
(escaped), ``{n:,}`` a number.  Every key starts with ``r.`` (the server's keys never do).  The English texts are
the report's as it has always printed them: ``ragexam report`` renders them byte for byte
(``tests/test_report_i18n.py``).
"""

from __future__ import annotations

from typing import Dict, Tuple

__all__ = ["STRINGS"]

STRINGS: Dict[str, Tuple[str, ...]] = {
    # -- shared ---------------------------------------------------------------------------------------------------
    "r.col.pipeline": ("pipeline", "파이프라인"),
    "r.col.metric": ("metric", "지표"),
    "r.col.type": ("type", "유형"),
    "r.col.question_id": ("question id", "질문 ID"),
    "r.not_found": ("not found", "찾지 못함"),
    "r.legend.baseline": ("(baseline)", "(기준선)"),
    "r.legend.label": ("pipelines", "파이프라인"),
    # -- scores ---------------------------------------------------------------------------------------------------
    "r.scores.title": ("Scores", "점수"),
    "r.scores.note": ("Means over the scored (answerable) questions; below each, the 95% confidence interval over "
                      "questions: the percentile bootstrap, or Wilson's for a rate over fewer than 30 questions or "
                      "with fewer than 5 hits or misses (a bootstrap of 4 hits of 4 would read [1.00–1.00]); none "
                      "below 5 questions. Bold: the best mean in the column.",
                      "채점한(답할 수 있는) 질문에 대한 평균입니다. 그 아래는 질문 단위 95% 신뢰구간입니다. 백분위 "
                      "부트스트랩이며, 질문이 30개보다 적거나 맞힘·놓침이 5개보다 적은 비율은 윌슨 구간입니다"
                      "(4개 중 4개를 맞힌 부트스트랩은 [1.00–1.00]이 되기 때문). 질문이 5개보다 적으면 구간을 내지 "
                      "않습니다. 굵은 글씨: 그 열에서 가장 높은 평균."),
    "r.scores.no_comparisons": ("No comparisons in this run.", "이 실행에는 비교가 없습니다."),
    "r.budget.title": ("At an equal context budget", "같은 컨텍스트 예산에서"),
    "r.budget.note": ("Each ranked list read until {spent} are spent (a chunk straddling the budget counts by its "
                      "share inside), so chunkers of different size get the same context; mean and 95% bootstrap "
                      "interval.",
                      "순위 목록마다 {spent}을(를) 다 쓸 때까지 읽습니다(예산 경계에 걸친 청크는 안쪽 비율만큼 "
                      "셉니다). 그래서 크기가 다른 청커도 같은 양의 컨텍스트를 받습니다. 평균과 부트스트랩 95% "
                      "신뢰구간."),
    "r.budget.chars": ("{n} characters", "{n}자"),
    "r.budget.tokens": ("{n} tokens", "{n}토큰"),
    "r.budget.or": (" or ", " 또는 "),
    "r.budget.the_budget": ("the budget", "예산"),
    "r.budget.mean_chars": ("mean chars", "평균 글자 수"),
    "r.unretrieved": ("unretrieved {n} of {total} scored questions ({kinds}), graded as misses: {questions}",
                      "채점한 질문 {total}개 중 {n}개를 검색하지 못했습니다({kinds}). 놓친 것으로 채점: {questions}"),
    "r.unretrieved_unscored": ("{n} out-of-corpus questions had no result (not scored)",
                               "범위 밖 질문 {n}개는 결과가 없었습니다(채점하지 않음)"),
    "r.latency": ("latency per question: median {median} s, p95 {p95} s, max {max} s (n {n})",
                  "질문당 지연 시간: 중앙값 {median}초, p95 {p95}초, 최대 {max}초 (n {n})"),
    "r.produced_nothing": ("produced nothing:", "결과가 없습니다:"),
    "r.evidence_split": ("{n} missed questions evidence_split: the chunking cut the evidence (a chunk of the top {k} "
                         "holds part of it) -- a chunking miss, not a retrieval miss",
                         "놓친 질문 {n}개는 evidence_split: 청크 분할이 근거를 잘랐습니다(상위 {k}개의 청크에 근거의 "
                         "일부만 있음). 검색이 아니라 청크 분할 때문에 놓친 것입니다",
                         "{n} missed question evidence_split: the chunking cut the evidence (a chunk of the top {k} "
                         "holds part of it) -- a chunking miss, not a retrieval miss"),
    # -- comparisons ----------------------------------------------------------------------------------------------
    "r.cmp.title": ("Comparisons against the baseline", "기준선과의 비교"),
    "r.cmp.title_budget": ("Comparisons at an equal context budget", "같은 컨텍스트 예산에서의 비교"),
    "r.cmp.note": ("diff = pipeline − baseline on the same questions, with its 95% paired-bootstrap interval; p from "
                   "the paired randomization test, and p Holm-adjusted over the metrics of each pair. "
                   '<span class="sig-up">▲ green</span> / <span class="sig-down">▼ red</span>: significant after '
                   "Holm (p &lt; 0.05) and the interval excludes 0. Hover a cell for its verdict; all verdicts are "
                   "listed below the table.",
                   "차이 = 같은 질문에서 파이프라인 − 기준선, 짝지은 부트스트랩 95% 신뢰구간과 함께. p는 짝지은 "
                   "무작위화 검정의 값이고, 쌍마다 여러 지표에 Holm 보정을 했습니다. "
                   '<span class="sig-up">▲ 초록</span> / <span class="sig-down">▼ 빨강</span>: Holm 보정 후 '
                   "유의하고(p &lt; 0.05) 신뢰구간이 0을 포함하지 않음. 칸에 마우스를 올리면 판정이 보이고, 모든 "
                   "판정은 표 아래에 있습니다."),
    "r.cmp.baseline": ("Baseline: ", "기준선: "),
    "r.cmp.vs": (" vs ", " 대 "),
    "r.cmp.diff": ("diff", "차이"),
    "r.cmp.ci": ("95% CI", "95% 신뢰구간"),
    "r.cmp.p_holm": ("p / Holm", "p / Holm 보정"),
    "r.cmp.all": ("All verdicts in words ({n})", "모든 판정 ({n}개)"),
    "r.cmp.all_budget": ("All budget verdicts in words ({n})", "예산 비교의 모든 판정 ({n}개)"),
    "r.cmp.mdd": ("min. detectable", "최소 검출 차이"),
    "r.cmp.p_from": ("p from", "p 계산 방법"),
    "r.cmp.verdict": ("verdict", "판정"),
    "r.p_from.exact": ("every sign pattern", "모든 부호 조합"),
    "r.p_from.approximate": ("random sign flips", "무작위 부호 뒤집기"),
    "r.p_note": ("How the p-values were computed: {parts}.", "p값 계산 방법: {parts}."),
    "r.p_note.exact": ("{n} comparisons exactly (every pattern of signs of the per-question differences counted)",
                       "비교 {n}개는 정확히(질문별 차이의 모든 부호 조합을 셈)",
                       "{n} comparison exactly (every pattern of signs of the per-question differences counted)"),
    "r.p_note.approximate": ("{n} comparisons from random sign flips of the per-question differences",
                             "비교 {n}개는 질문별 차이의 부호를 무작위로 뒤집어",
                             "{n} comparison from random sign flips of the per-question differences"),
    "r.p_note.approximate_of": ("{n} comparisons from random sign flips of the per-question differences ({flips} of "
                                "them)",
                                "비교 {n}개는 질문별 차이의 부호를 무작위로 뒤집어({flips}번)",
                                "{n} comparison from random sign flips of the per-question differences ({flips} of "
                                "them)"),
    # -- the LLM judge --------------------------------------------------------------------------------------------
    "r.judge.title": ("LLM judge", "LLM 심사"),
    "r.judge.note": ("{model} at {endpoint}, prompts {language}, {n} repeats. Means and pass rates over the judged "
                     "answers only (unjudged answers are counted, never averaged in); below each, the 95% interval: "
                     "the percentile bootstrap of a mean, Wilson's of a pass rate (none below 5 judged answers).",
                     "{model} ({endpoint}), 프롬프트 {language}, 반복 {n}번. 평균과 통과율은 판정한 답변만으로 "
                     "냅니다(판정하지 못한 답변은 세기만 하고 평균에 넣지 않음). 그 아래는 95% 구간입니다. 평균은 "
                     "백분위 부트스트랩, 통과율은 윌슨 구간이며, 판정한 답변이 5개보다 적으면 구간을 내지 않습니다.",
                     "{model} at {endpoint}, prompts {language}, {n} repeat. Means and pass rates over the judged "
                     "answers only (unjudged answers are counted, never averaged in); below each, the 95% interval: "
                     "the percentile bootstrap of a mean, Wilson's of a pass rate (none below 5 judged answers)."),
    "r.judge.col.mean": ("mean", "평균"),
    "r.judge.col.pass_rate": ("pass rate", "통과율"),
    "r.judge.col.coverage": ("coverage", "판정 비율"),
    "r.judge.col.flipped": ("flipped", "판정이 바뀐 비율"),
    "r.judge.col.ties": ("ties", "동률"),
    "r.judge.col.unjudged": ("unjudged", "판정 못 함"),
    "r.judge.vs_title": ("The judge beside the evidence", "심사 결과와 근거 비교"),
    "r.judge.vs_note": ("The same contexts graded twice: by the judge, and without an LLM from the question's "
                        "evidence spans. Where they disagree, either the judge is wrong or the evidence is too narrow.",
                        "같은 컨텍스트를 두 번 채점했습니다. 한 번은 심사 모델이, 한 번은 LLM 없이 질문의 근거 "
                        "구간으로. 둘이 다르면 심사가 틀렸거나 근거가 너무 좁은 것입니다."),
    "r.judge.col.judge": ("judge", "심사"),
    "r.judge.col.value": ("value", "값"),
    "r.judge.col.evidence": ("evidence", "근거"),
    "r.judge.col.agree": ("agree", "일치"),
    "r.judge.col.n_evidence": ("answers with evidence", "근거가 있는 답변 수"),
    "r.judge.vs_on": ("The judge's value here is over the answers whose question has evidence (the n column), not "
                      "over every answer as in the judge's table above, so the two may differ.",
                      "여기 심사 값은 근거가 있는 질문의 답변(n 열)으로만 냅니다. 위 심사 표는 모든 답변으로 내므로 "
                      "두 값이 다를 수 있습니다."),
    "r.judge.not_applicable": ("{n} not applicable", "해당 없음 {n}"),
    "r.judge.na_note": ("Coverage is judged of judgeable answers; an answer the metric does not apply to (it "
                        "declines, so it makes no claim to check) is not judgeable and is counted apart.",
                        "판정 비율은 판정할 수 있는 답변 중 판정한 비율입니다. 지표가 적용되지 않는 답변(답을 거절해 "
                        "확인할 주장이 없음)은 판정 대상이 아니며 따로 셉니다."),
    "r.judge.col.disagreeing": ("disagreeing questions", "일치하지 않은 질문"),
    "r.ci.too_few": ("n = {n}: too few for an interval", "n = {n}: 구간을 내기에는 너무 적음"),
    "r.judge.col.trust": ("judge separates?", "심사가 구별하나?"),
    "r.judge.trust_title": ("Is the judge worth reading?", "심사 결과를 믿을 만한가?"),
    "r.judge.trust_note": ("Whether this judge tells good from bad on each metric: a judge-check on a seeded sample of "
                           "this question set (known-good against deliberately broken items, ROC AUC with its 95% "
                           "interval) and, for context metrics, the judge beside the evidence of these answers. Read "
                           "a metric whose judge does not separate as the judge's opinion, not a measurement; "
                           "<code>ragexam check</code> does not gate on it.",
                           "심사 모델이 지표마다 좋은 것과 나쁜 것을 구별하는지: 이 질문 세트에서 시드로 뽑은 "
                           "표본으로 한 <code>judge-check</code>(좋은 항목과 일부러 망가뜨린 항목, <code>ROC AUC</code>와 95% 구간)와, "
                           "컨텍스트 지표라면 이 답변들의 근거와 나란히 본 심사 결과입니다. 구별하지 못하는 지표는 "
                           "측정이 아니라 심사 모델의 의견으로 읽으십시오. <code>ragexam check</code>는 그 지표로 "
                           "합격 여부를 가르지 않습니다."),
    "r.judge.written_note": ("A metric named \"mean P(true)\" or \"expected score\" is weighted by the judge's "
                             "token probabilities; \"written\" beside it is the mean of the scores the judge wrote, "
                             "and the pass rate always counts the written verdicts.",
                             "<code>mean P(true)</code>나 <code>expected score</code>라고 적힌 지표는 심사 모델의 토큰 확률로 가중한 "
                             "값입니다. 옆의 \"직접 쓴 점수\"는 심사 모델이 직접 쓴 점수의 평균이고, 통과율은 언제나 직접 쓴 "
                             "판정을 셉니다."),
    "r.judge.col.written": ("written", "직접 쓴 점수"),
    "r.judge.pass_written": ("pass rate of the written verdicts", "직접 쓴 판정의 통과율"),
    "r.judge.corrected": ("{metric}: corrected by {n:,} human labels", "{metric}: 사람 레이블 {n:,}개로 보정",
                          "{metric}: corrected by {n:,} human label"),
    "r.judge.labels_own": ("{metric}: the {n:,} human labels' own mean", "{metric}: 사람 레이블 {n:,}개의 평균",
                           "{metric}: the human label's own value"),
    "r.judge.preferred_note": ("Where human labels exist, the table shows the estimate they support (marked): the "
                               "judge's mean corrected by them when that narrows the interval, else the labels' own "
                               "mean.",
                               "사람 레이블이 있으면 표에는 그 레이블이 뒷받침하는 추정값을 (표시해서) 보입니다. 보정으로 "
                               "구간이 좁아지면 레이블로 보정한 심사 평균을, 아니면 레이블 자체의 평균을 보입니다."),
    "r.trust.separates": ("yes", "예"),
    "r.trust.weakly": ("weakly", "약하게"),
    "r.trust.does_not": ("no", "아니요"),
    "r.trust.inverted": ("inverted", "거꾸로"),
    "r.trust.too_few": ("too few to tell", "질문이 적어 판단 불가"),
    "r.trust.unknown": ("no verdict", "판단 없음"),
    "r.trust.other_set": ("on another set only", "다른 질문 세트에서만"),
    "r.trust.unchecked": ("not checked", "확인 안 함"),
    "r.trust.no_contrast": ("cannot be checked", "확인할 수 없음"),
    # -- the rerank stage -----------------------------------------------------------------------------------------
    "r.rerank.title": ("Rerank stage", "재순위화 단계"),
    "r.rerank.note": ("Each reranked pipeline against its own first stage, on the same questions: difference of the "
                      "means, paired-bootstrap 95% interval, reading after Holm's correction. A reranker can only "
                      "reorder the first stage's top candidates: the recall ceiling is the share of questions with a "
                      "relevant unit among them.",
                      "재순위화한 파이프라인마다 자기 1단계와 같은 질문에서 비교합니다: 평균의 차이, 짝지은 "
                      "부트스트랩 95% 신뢰구간, Holm 보정 후의 해석. 재순위화는 1단계의 상위 후보 순서만 바꿀 수 "
                      "있으므로, 재현율 상한은 후보 안에 관련 단위가 있는 질문의 비율입니다."),
    "r.rerank.stage": ("first stage <code>{first}</code>, top {top} reranked by <code>{reranker}</code>",
                       "1단계 <code>{first}</code>, 상위 {top}개를 <code>{reranker}</code>(으)로 재순위화"),
    "r.rerank.col.first": ("first stage", "1단계"),
    "r.rerank.col.reranked": ("reranked", "재순위화 후"),
    "r.rerank.col.lift": ("lift", "향상"),
    "r.rerank.col.p": ("p (Holm)", "p (Holm 보정)"),
    "r.rerank.col.reading": ("reading", "해석"),
    "r.rerank.ceiling": ("first stage recall@{top}: {recall} ({within} questions); of {misses} misses at k={k}, "
                         "{outside} lay outside the candidates (no reranker can fix them) and {inside} inside",
                         "1단계 recall@{top}: {recall} (질문 {within}개). k={k}에서 놓친 {misses}개 중 {outside}개는 "
                         "후보 밖에 있었고(어떤 재순위화로도 고칠 수 없음) {inside}개는 후보 안에 있었습니다"),
    "r.rerank.by_type": ("lift by type: ", "유형별 향상: "),
    "r.rerank.fixed": ("fixed {n}", "고친 질문 {n}개"),
    "r.rerank.broken": ("broken {n}", "망친 질문 {n}개"),
    "r.rerank.queries": ("queries: {reranked} reranked, {partial} partly (unjudged candidates keep their place), "
                         "{failed} failed (first-stage order kept)",
                         "질문: {reranked}개 재순위화, {partial}개 일부만(판정 못 한 후보는 제자리), {failed}개 실패"
                         "(1단계 순서 유지)"),
    "r.rerank.latency": ("latency per query: median {median} s, p95 {p95} s, max {max} s (n {n}, as measured when "
                         "called)",
                         "질문당 지연 시간: 중앙값 {median}초, p95 {p95}초, 최대 {max}초 (n {n}, 호출할 때 잰 값)"),
    "r.rerank.work": ("the reranker's work: ", "재순위화 작업량: "),
    "r.usage.calls": ("{n} calls made now", "지금 보낸 호출 {n}번"),
    "r.usage.cached": ("{n} answered from the cache", "캐시에서 답한 {n}번"),
    "r.usage.failed": ("{n} calls failed", "실패한 호출 {n}번"),
    "r.usage.requests": ("{n} HTTP requests", "HTTP 요청 {n}번"),
    "r.usage.texts_embedded": ("{n} texts embedded", "임베딩한 텍스트 {n}개"),
    "r.usage.prompt_tokens": ("{n} prompt tokens", "프롬프트 토큰 {n}개"),
    "r.usage.completion_tokens": ("{n} completion tokens", "응답 토큰 {n}개"),
    "r.usage.cost": ("cost {cost}", "비용 {cost}"),
    "r.usage.model": ("model {model}", "모델 {model}"),
    # -- plots ----------------------------------------------------------------------------------------------------
    "r.plots.title": ("Plots", "그래프"),
    "r.plots.sweep": ("Precision, recall and F1 by K", "K별 정밀도, 재현율, F1"),
    "r.plots.fbeta_title": ("F-beta by β", "β별 F-베타"),
    "r.plots.types_title": ("By question type", "질문 유형별"),
    "r.plots.ranks_title": ("First-correct ranks", "첫 정답 순위"),
    "r.plots.attribution_title": ("Stage attribution", "실패 단계 분석"),
    "r.plots.no_sweep": ("This run has no metric@K sweep.", "이 실행에는 K별 지표가 없습니다."),
    "r.plots.no_fbeta": ("This run has no F-beta sweep.", "이 실행에는 F-베타 값이 없습니다."),
    "r.plots.no_types": ("This run has no per-type breakdown.", "이 실행에는 유형별 결과가 없습니다."),
    "r.plots.no_rows": ("per_question.csv was not available, so ranks cannot be shown.",
                        "per_question.csv가 없어서 순위를 보여 줄 수 없습니다."),
    "r.plots.precision": ("Precision", "정밀도"),
    "r.plots.recall": ("Recall", "재현율"),
    "r.plots.f1": ("F1", "F1 점수"),
    "r.plots.at_k": ("{name}@K", "{name}@K (K별)"),
    "r.plots.fbeta": ("F-beta@K, β = {beta}", "F-베타@K, β = {beta}"),
    "r.plots.fbeta_note": ("β &lt; 1 weighs precision more, β &gt; 1 recall more (β = 1 is F1).",
                           "β &lt; 1이면 정밀도를, β &gt; 1이면 재현율을 더 무겁게 봅니다(β = 1은 F1)."),
    "r.plots.whiskers": ("whiskers: 95% CI within the type", "수염: 유형 안의 95% 신뢰구간"),
    "r.plots.by_type": ("{metric} by question type", "질문 유형별 {metric}"),
    "r.plots.rank_title": ("Rank of the first correct chunk", "첫 정답 청크의 순위"),
    "r.plots.rank_y": ("share of questions", "질문 비율"),
    "r.plots.rank_x": ("first-correct rank", "첫 정답 순위"),
    "r.plots.rank_marker": ("missed beyond k={k}", "k={k} 밖은 놓침"),
    "r.plots.rank_tip": ("{pipeline} · rank {group}: {count} of {n} questions ({share})",
                         "{pipeline} · 순위 {group}: 질문 {n}개 중 {count}개 ({share})",
                         "{pipeline} · rank {group}: {count} of {n} question ({share})"),
    "r.plots.no_attribution": ("No stage attribution in this run: it appears after answer scoring "
                               "(<code>ragexam score</code>), which says for each question whether retrieval, "
                               "chunking or generation lost the answer.",
                               "이 실행에는 실패 단계 분석이 없습니다. 답변을 채점하면(<code>ragexam score</code>) "
                               "질문마다 검색, 청크 분할, 생성 중 어디서 답을 놓쳤는지 나옵니다."),
    "r.plots.attribution_note": ("Questions per type (rows) by the stage that lost the answer (columns); shading: "
                                 "share of the row.",
                                 "유형(행)별로 답을 놓친 단계(열)에 해당하는 질문 수. 색의 진하기: 행 안에서의 비율."),
    "r.plots.attribution_open": (" Open a cell for its questions.", " 칸을 열면 그 질문들이 보입니다."),
    # -- a missed question ----------------------------------------------------------------------------------------
    "r.missed.question": ("question", "질문"),
    "r.missed.evidence": ("evidence", "근거"),
    "r.missed.ground_truth": ("ground truth", "정답"),
    "r.missed.answer": ("answer", "답변"),
    "r.missed.judge": ("judge", "심사"),
    "r.missed.reasoning": ("judge reasoning", "심사 이유"),
    "r.missed.stage": ("stage", "단계"),
    "r.missed.unretrieved": ("unretrieved", "검색 실패"),
    "r.missed.split": ("evidence split", "근거 분할"),
    "r.missed.split_text": ("<b>#{rank} <code>{chunk}</code></b> holds the {part} ({chars} of {length} characters) of "
                            '<span class="evidence">{evidence}</span>; no chunk of the top {k} holds it whole: the '
                            "chunker cut it",
                            "<b>#{rank} <code>{chunk}</code></b>에 <span class=\"evidence\">{evidence}</span>의 "
                            "{part} 부분({length}자 중 {chars}자)만 있습니다. 상위 {k}개 중 근거 전체를 담은 청크가 "
                            "없습니다: 청커가 근거를 잘랐습니다"),
    "r.missed.ranks": ("evidence ranks", "근거별 순위"),
    "r.missed.first_correct": ("first correct chunk", "첫 정답 청크"),
    "r.missed.not_in_run": ("not in the run output", "실행 결과에 없음"),
    "r.missed.none_recorded": ("none recorded", "기록 없음"),
    "r.missed.not_available": ("not available", "없음"),
    "r.missed.top": ("Top {n} retrieved chunks (missed cutoff k = {k})", "검색된 상위 청크 {n}개 (놓침 기준 k = {k})",
                     "Top {n} retrieved chunk (missed cutoff k = {k})"),
    "r.missed.no_chunks": ("No retrieved chunks recorded for this question.",
                           "이 질문에는 기록된 검색 청크가 없습니다."),
    "r.missed.where_doc": ("Where a relevant document was found (rank {rank})", "관련 문서를 찾은 곳 (순위 {rank})"),
    "r.missed.where_evidence": ("Where the evidence was found (rank {rank})", "근거를 찾은 곳 (순위 {rank})"),
    "r.first.not_returned": ("not among the {n} returned for this question", "이 질문에 반환된 {n}개 안에 없음"),
    "r.first.not_within": ("not within the search depth ({depth})", "검색 깊이({depth}) 안에 없음"),
    "r.first.doc_rank": ("document rank {rank} (k counts documents)", "문서 순위 {rank}(k는 문서 수)"),
    "r.first.doc_unnamed": ("a chunk of a relevant document at {doc_rank}; this run folder does not name the chunk",
                            "{doc_rank}에 관련 문서의 청크가 있음. 이 실행 폴더에는 그 청크가 기록되어 있지 않습니다"),
    "r.first.of_doc": (" of relevant document <code>{doc}</code>", " (관련 문서 <code>{doc}</code>)"),
    "r.first.doc_chunk": ("<code>{chunk}</code>{doc} at chunk rank {rank}, {doc_rank}",
                          "<code>{chunk}</code>{doc}, 청크 순위 {rank}, {doc_rank}"),
    "r.first.chunk": ("<code>{chunk}</code> at rank {rank}", "<code>{chunk}</code>, 순위 {rank}"),
    "r.first.beyond": ("at rank {rank} (beyond the {n} ids kept per question)",
                       "순위 {rank} (질문마다 보관한 ID {n}개 밖)"),
    "r.chunk.doc": ("doc {doc}", "문서 {doc}"),
    "r.chunk.score": ("score {score}", "점수 {score}"),
    "r.chunk.contains": ("contains evidence", "근거 포함"),
    "r.chunk.split": ("holds part of the evidence: split", "근거의 일부만 있음: 분할됨"),
    # -- the dataset card and the settings ------------------------------------------------------------------------
    "r.ds.title": ("Dataset card", "데이터셋 카드"),
    "r.ds.corpus": ("corpus", "코퍼스"),
    "r.ds.qa": ("qa", "질문 세트"),
    "r.ds.n_documents": ("n_documents", "문서 수"),
    "r.ds.n_questions": ("n_questions", "질문 수"),
    "r.ds.n_answerable": ("n_answerable", "답할 수 있는 질문 수"),
    "r.ds.n_out_of_corpus": ("n_out_of_corpus", "코퍼스 밖 질문 수"),
    "r.ds.n_scored": ("n_scored", "채점한 질문 수"),
    "r.ds.corpus_sha256": ("corpus_sha256", "코퍼스 SHA-256"),
    "r.ds.qa_sha256": ("qa_sha256", "질문 세트 SHA-256"),
    "r.ds.audit": ("question set audit", "질문 세트 검수"),
    "r.ds.chunks": ("chunks ({chunker})", "청크 수 ({chunker})"),
    "r.ds.chunking": ("chunks", "청크"),
    "r.ds.budget": ("budget", "예산"),
    "r.ds.scored_types": ("scored_types", "채점한 질문의 유형"),
    "r.ds.n_evidence": ("n_evidence", "근거 문자열 수"),
    "r.ds.n_unmatched_evidence": ("n_unmatched_evidence", "청크에 통째로 담기지 않은 근거 수 (청커별)"),
    "r.ci.signed": ("{lo} to {hi}", "{lo} ~ {hi}"),
    "r.ds.size": ("{name}: {counted}, mean {mean} / max {max} characters", "{name}: {counted}, 평균 {mean}자 / 최대 {max}자"),
    "r.ds.size_chunks": ("{n:,} chunks", "청크 {n:,}개", "{n:,} chunk"),
    "r.ds.size_returned": ("{n:,} texts returned, {distinct:,} distinct", "반환된 텍스트 {n:,}개 (서로 다른 것 {distinct:,}개)",
                           "{n:,} text returned, {distinct:,} distinct"),
    "r.ds.size_distinct": ("{n:,} distinct texts returned", "반환된 서로 다른 텍스트 {n:,}개", "{n:,} distinct text returned"),
    "r.ds.size_no_text": ("{name}: no text returned", "{name}: 반환된 텍스트 없음"),
    "r.ds.size_cut": (" · {n:,} sentences longer than {size} characters cut inside (windows overlapping by a tenth)",
                      " · {size}자보다 긴 문장 {n:,}개는 문장 안에서 자름 (10분의 1씩 겹치는 창)",
                      " · {n:,} sentence longer than {size} characters cut inside (windows overlapping by a tenth)"),
    "r.ds.size_over": (" · {n:,} over {embedder}'s window of {window} tokens ({action})",
                       " · {n:,}개가 {embedder}의 창 {window} 토큰을 넘음 ({action})"),
    "r.ds.size_within": (" · all within {embedder}'s window of {window} tokens",
                         " · 모두 {embedder}의 창 {window} 토큰 안"),
    "r.ds.size_windowed": ("windowed", "여러 창으로 나눠 임베딩하고 평균"),
    "r.ds.size_truncated": ("truncated", "넘는 부분은 잘림"),
    "r.ds.budget_text": ("{budgets} ({why}): every ranking metric also cut at {units} of context, read in rank order",
                         "{budgets} ({why}): 모든 순위 지표를 순위대로 읽은 문맥 {units}에서도 자름"),
    "r.ds.budget_given": ("given with -k", "-k로 지정"),
    "r.ds.budget_equal": ("{k} chunks of the median mean size: chunkings of different size are compared",
                          "평균 크기의 중앙값인 청크 {k}개: 크기가 다른 청킹을 비교함"),
    "r.ds.budget_unit_c": ("{n} characters", "{n}자"),
    "r.ds.budget_unit_t": ("{n} tokens", "{n} 토큰"),
    "r.ds.budget_counted": ("; tokens counted by {counter}", "; 토큰은 {counter}로 셈"),
    "r.ds.types": ("Question types", "질문 유형"),
    "r.ds.questions": ("questions", "질문 수"),
    "r.ds.share": ("share", "비율"),
    "r.ds.warnings": ("Warnings ({n})", "경고 ({n}개)"),
    "r.ds.no_chunker": ("No pipeline used a ragexam chunker: every one returned its own texts, judged by whether they "
                        "contain the evidence.",
                        "ragexam 청커를 쓴 파이프라인이 없습니다. 모두 자기 텍스트를 돌려주었고, 근거를 담았는지로 "
                        "판정했습니다."),
    "r.ds.unmatched": ("Unmatched evidence ({n})", "청크에 담기지 않은 근거 ({n}개)"),
    "r.ds.unmatched_note": ("Evidence no chunk contains whole, so no chunk gets credit for it.",
                            "어떤 청크에도 통째로 들어 있지 않은 근거라서, 어느 청크도 정답으로 인정받지 못합니다."),
    "r.ds.chunker": ("chunker", "청커"),
    "r.ds.reason": ("reason", "이유"),
    "r.ds.where": ("where", "위치"),
    "r.ds.all_matched": ("Every evidence string lies whole inside some chunk.",
                         "모든 근거 문자열이 어떤 청크 안에 통째로 들어 있습니다."),
    "r.set.title": ("Settings", "설정"),
    "r.set.note": ("Everything that produced the numbers above; the same config, dataset (same hashes) and ragexam "
                   "version reproduce them.",
                   "위의 숫자를 만든 모든 설정입니다. 같은 설정, 같은 데이터셋(같은 해시), 같은 ragexam 버전이면 "
                   "같은 숫자가 나옵니다."),
    "r.set.run_id": ("run id", "실행 ID"),
    "r.set.created": ("created", "만든 시각"),
    "r.set.format": ("format", "형식"),
    "r.set.version": ("ragexam version", "ragexam 버전"),
    "r.set.miss_k": ("missed cutoff k", "놓침 기준 k"),
    "r.set.config": ("Config", "설정값"),
    "r.set.signatures": ("Signatures", "시그니처"),
    "r.set.signature": ("signature", "시그니처"),
    "r.set.results": ("(results)", "(결과)"),
    "r.set.json": ("summary config and dataset as JSON", "요약의 설정과 데이터셋(JSON)"),
    # -- the static report's own page (ragexam.report.html) and its header (RunView.facts) ------------------------
    "r.html.title": ("ragexam report", "ragexam 보고서"),
    "r.html.page_title": ("ragexam report — {dataset} — {run}", "ragexam 보고서 — {dataset} — {run}"),
    "r.html.missed": ("Missed questions", "놓친 질문"),
    "r.html.dataset": ("Dataset", "데이터셋"),
    "r.html.missed_note": ("Answerable questions whose first correct chunk is not within the top {k} (or not found "
                           "within the search depth). Open a row for the question, the evidence, the answers and the "
                           "retrieved chunks with the evidence <mark>marked</mark>.",
                           "답할 수 있는 질문 가운데 첫 정답 청크가 상위 {k}개 안에 없는(또는 검색 깊이 안에서 찾지 "
                           "못한) 질문. 행을 열면 질문, 근거, 답변, 그리고 근거를 <mark>표시</mark>한 검색 청크를 볼 수 "
                           "있습니다."),
    "r.html.no_missed": ("No missed questions.", "놓친 질문이 없습니다."),
    "r.html.all": ("all", "전체"),
    "r.html.shown": ("{count} of {n} shown", "{n}개 중 {count}개 표시"),
    "r.html.first_rank": ("first rank", "첫 정답 순위"),
    "r.html.show": ("show", "보기"),
    "r.html.hide": ("hide", "숨기기"),
    "r.html.split": ("evidence split", "근거 분할됨"),
    "r.html.split_hint": ("the chunking cut the evidence", "청크 분할이 근거를 잘랐습니다"),
    "r.html.notes": ("Notes", "참고"),
    "r.html.footer": ("Generated by ragexam {version} on {now}. Self-contained: no network needed to view it.",
                      "ragexam {version}이(가) {now}에 만들었습니다. 파일 하나로 완결되어 있어 네트워크 없이 볼 수 "
                      "있습니다."),
    "r.facts.dataset": ("dataset <b>{name}</b>", "데이터셋 <b>{name}</b>"),
    "r.facts.pipelines": ("{n} pipelines", "파이프라인 {n}개", "{n} pipeline"),
    "r.facts.scored": ("{n} scored questions", "채점한 질문 {n}개", "{n} scored question"),
    "r.facts.relevance": ("relevance <b>{rule}</b>", "관련성 기준 <b>{rule}</b>"),
    "r.facts.rule.evidence": (" (a chunk counts when it contains an evidence string; k counts chunks)",
                              " (근거 문자열이 든 청크가 정답, k는 청크 수)"),
    "r.facts.rule.doc": (" (a chunk counts for its document; k counts distinct documents)",
                         " (청크는 그 문서로 정답 여부가 정해지고, k는 서로 다른 문서 수)"),
    "r.facts.run": ("run <code>{id}</code>", "실행 <code>{id}</code>"),
    # -- a score's segments (score --by: ragexam.report.segments_html) ------------------------------------------
    "r.seg.nav": ("Segments", "구간"),
    "r.seg.title": ("Segments by <code>{by}</code>", "<code>{by}</code>별 구간"),
    "r.seg.title_all": ("All answers", "전체 답변"),
    "r.seg.intro": ("Each segment's judge metrics over its judged answers (the mean, its 95% interval below, n judged), "
                    "the exam's evidence on the answers whose question is an exam question, feedback, latency and "
                    "tokens.", "구간마다 판정된 답변에 대한 심판 지표(평균, 그 아래 95% 구간, 판정한 답변 수), 시험 "
                    "문제와 같은 질문의 답변에 대해 시험 근거로 잰 결과, 피드백, 지연 시간과 토큰 수입니다."),
    "r.seg.baseline": ('Baseline: <b class="data">{name}</b>.', '기준 구간: <b class="data">{name}</b>.'),
    "r.seg.overlap": ("An answer is counted in every <code>{by}</code> it has: the segments overlap.",
                      "답변은 자기가 가진 <code>{by}</code>마다 모두 셉니다. 구간끼리 겹칩니다."),
    "r.seg.too_few": ("too few", "너무 적음"),
    "r.seg.n": ("n = {n}", "{n}개"),
    "r.seg.of": ("{k} of {n}", "{n}개 중 {k}개"),
    "r.seg.col.segment": ("segment", "구간"),
    "r.seg.col.answers": ("answers", "답변"),
    "r.seg.col.questions": ("questions", "질문"),
    "r.seg.col.failed": ("failed requests", "실패한 요청"),
    "r.seg.col.negative": ("negative feedback", "부정 피드백"),
    "r.seg.col.exam": ("exam: {metric}", "시험 근거: {metric}"),
    "r.seg.spread.title": ("Latency and tokens", "지연 시간과 토큰"),
    "r.seg.spread.note": ("p50 / p90 / p99 and the number of answers that recorded it. A percentile is shown only when "
                          "values lie above it: p90 needs 10 of them, p99 100.",
                          "p50 / p90 / p99와 값을 기록한 답변 수입니다. 백분위수는 그보다 큰 값이 있을 때만 보입니다. "
                          "p90은 10개, p99는 100개가 있어야 합니다."),
    "r.seg.col.latency": ("latency (ms)", "지연 시간 (ms)"),
    "r.seg.tokens.input": ("input tokens", "입력 토큰"),
    "r.seg.tokens.output": ("output tokens", "출력 토큰"),
    "r.seg.tokens.total": ("total tokens", "전체 토큰"),
    "r.seg.cmp.title": ("Against the baseline", "기준 구간과 비교"),
    "r.seg.cmp.note": ("B − A per metric: paired on the questions both segments asked when they share at least "
                       "{min_n}, otherwise unpaired on all their answers; p after Holm's correction over the {n} "
                       "comparisons.", "지표마다 B − A입니다. 두 구간이 같은 질문을 {min_n}개 이상 받았으면 그 질문으로 "
                       "짝지어 비교하고, 아니면 모든 답변을 짝짓지 않고 비교합니다. p는 비교 {n}개 전체에 Holm "
                       "보정을 한 값입니다."),
    "r.seg.col.metric": ("metric", "지표"),
    "r.seg.col.compared_on": ("compared on", "비교 방식"),
    "r.seg.col.diff": ("diff", "차이"),
    "r.seg.col.ci": ("95% CI", "95% 구간"),
    "r.seg.col.p": ("p (Holm)", "p (Holm 보정)"),
    "r.seg.col.verdict": ("verdict", "판정"),
    "r.seg.paired": ("paired, {n} questions", "짝지은 비교, 질문 {n}개"),
    "r.seg.left_out": ("; {n} answers of other questions left out", "; 다른 질문의 답변 {n}개는 빠짐"),
    "r.seg.unpaired": ("unpaired, {a} and {b} answers", "짝짓지 않은 비교, 답변 {a}개와 {b}개"),
    "r.seg.cmp_too_few": ("too few to compare", "비교하기에 너무 적음"),
    "r.seg.in_both": ("; {n} answers in both segments not compared", "; 두 구간에 모두 든 답변 {n}개는 비교하지 않음"),
    "r.seg.worst.title": ("Answers to read first", "먼저 읽을 답변"),
    "r.seg.worst.some": ("the first {shown} of {n}", "{n}개 중 처음 {shown}개"),
    "r.seg.worst.note": ("Negative feedback first, then failed requests, failed judge verdicts and the lowest judged "
                         "scores.", "부정 피드백, 실패한 요청, 통과하지 못한 심판 판정, 가장 낮은 판정 점수 순입니다."),
    "r.seg.col.answer_id": ("answer", "답변 ID"),
    "r.seg.col.why": ("why", "이유"),
    "r.seg.col.question": ("question", "질문"),
    "r.seg.exam": ("{m} of {n} traced answers ask a question of the exam <code>{qa}</code> ({exact} exact, {near} "
                   "near: cosine ≥ {t} with the same numbers); their contexts are also graded against the exam's "
                   "evidence (the exam columns).", "추적된 답변 {n}개 중 {m}개가 시험 <code>{qa}</code>의 질문입니다 "
                   "(같은 질문 {exact}개, 거의 같은 질문 {near}개: 코사인 {t} 이상이고 숫자가 같음). 이 답변의 "
                   "컨텍스트는 시험 근거로도 채점합니다 (시험 근거 열)."),
    "r.seg.exam_none": ("None of the {n} traced answers asks a question of the exam <code>{qa}</code>.",
                        "추적된 답변 {n}개 중 시험 <code>{qa}</code>의 질문은 없습니다."),
    "r.seg.warnings": ("The judge's own check", "심판 점검 결과"),
    "r.seg.notes": ("Notes", "참고"),
    "r.seg.none": ("No answers to segment.", "구간으로 나눌 답변이 없습니다."),
}
