"""Every text ``ragexam serve`` shows, in English and Korean (the catalogue of :mod:`ragexam.serve.i18n`).

``STRINGS[key] = (English, 한국어)``, or ``(English, 한국어, English when n is 1)``.  A text is HTML written here:
it may hold ``<b>``, ``<code>``, ``<kbd>``, a link; write ``&lt;`` for ``<``.  ``{name}`` takes a value the page
passes (escaped), ``{n:,}`` a number.  Keys are grouped by page; ``col.*`` and ``filter.*`` are shared.

To add a text: add its key here with both languages, and call ``t("key", name=value)`` in the template (or
``current().t(...)`` in Python).  ``tests/test_serve_i18n.py`` fails on a key a template uses that is missing here,
on a key with one language only, and on English left on a Korean page.
"""

from __future__ import annotations

from typing import Dict, Tuple

__all__ = ["STRINGS", "REASONS_KO"]

STRINGS: Dict[str, Tuple[str, ...]] = {
    # -- every page ---------------------------------------------------------------------------------------------
    "nav.home": ("Home", "처음으로"),
    "nav.runs": ("runs", "실행 목록"),
    "nav.language": ("Language", "언어"),
    "kind.run": ("run", "실행"),
    "kind.score": ("score", "채점"),
    "kind.runs": ("runs", "실행만"),
    "kind.scores": ("scores", "채점만"),
    "pager.previous": ("previous", "이전"),
    "pager.next": ("next", "다음"),
    "pager.position": ("{what} {first:,}–{last:,} of {n:,} (page {page:,} of {pages:,})",
                       "{what} {n:,}개 중 {first:,}–{last:,} ({pages:,}쪽 중 {page:,}쪽)"),
    "pager.records": ("records", "기록"),
    "pager.questions": ("questions", "질문"),
    "pager.answers": ("answers", "답변"),
    "pager.rows": ("rows", "행"),
    "filter.show": ("show", "보기"),
    "filter.all": ("all", "전체"),
    "filter.any": ("any", "전체"),
    "filter.pipeline": ("pipeline", "파이프라인"),
    "filter.type": ("type", "유형"),
    "filter.stage": ("stage", "단계"),
    "filter.status": ("status", "상태"),
    "filter.shown": ('<b id="{id}">{shown:,}</b> of {n:,} shown', '{n:,}개 중 <b id="{id}">{shown:,}</b>개 표시'),
    "filter.rejected_by_generator": ("rejected by the generator", "생성기가 탈락시킨 후보"),
    "filter.set_questions": ("— (the set's questions)", "— (세트의 질문)"),
    "filter.any_reason": ("any reason", "모든 사유"),
    "col.id": ("id", "ID"),
    "col.question": ("question", "질문"),
    "col.answer": ("answer", "답변"),
    "col.evidence": ("evidence", "근거"),
    "col.reference": ("reference", "정답"),
    "col.stage": ("stage", "단계"),
    "col.verdict": ("verdict", "판정"),
    "col.diff": ("diff", "차이"),
    "col.p_holm": ("p Holm", "p (Holm 보정)"),
    "col.edited": ("edited", "수정한 항목"),
    "field.question": ("question", "질문"),
    "field.ground_truth": ("answer", "답변"),
    "field.evidence": ("evidence", "근거"),
    "field.type": ("type (out of corpus)", "유형 (문서 밖)"),
    "status.pending": ("pending", "보류"),
    "status.accepted": ("accepted", "승인"),
    "status.rejected": ("rejected", "거절"),
    "status.edited": ("edited", "수정됨"),
    "status.all": ("all", "전체"),
    "status.candidate": ("candidate", "후보"),
    # -- error pages ----------------------------------------------------------------------------------------------
    "error.not_found": ("Not found", "찾을 수 없습니다"),
    "error.method": ("Method not allowed", "허용되지 않는 요청 방식"),
    "error.refused": ("Refused", "거부했습니다"),
    "error.bad_request": ("Bad request", "잘못된 요청"),
    "error.too_large": ("Too large", "요청이 너무 큽니다"),
    "error.file": ("A file could not be read", "파일을 읽을 수 없습니다"),
    "error.file_reason": ("The reason (file, line, field) and the fix:", "원인(파일, 줄, 필드)과 해결 방법:"),
    "error.internal": ("Internal error", "내부 오류"),
    "error.internal_reason": ("{what}. The page could not be made; the server's terminal shows the details. Your "
                              "saved decisions are safe in the review sheet.",
                              "{what}. 페이지를 만들지 못했습니다. 자세한 내용은 서버를 실행한 터미널에 있습니다. 저장한 "
                              "검토 결정은 검토 시트에 그대로 있습니다."),
    "error.wrong_host": ("Wrong host name", "잘못된 호스트 이름"),
    "error.wrong_host_reason": ("this server answers to its loopback address only, and the request named the host "
                                "<code>{host}</code>; open <code>http://127.0.0.1:{port}/</code>",
                                "이 서버는 루프백 주소로만 응답하는데, 요청의 호스트가 <code>{host}</code>였습니다. "
                                "<code>http://127.0.0.1:{port}/</code>로 여세요."),
    "error.token": ("Access token needed", "접근 토큰이 필요합니다"),
    "error.token_reason": ("this server needs its access token: open the address with <code>?token=YOUR_TOKEN</code> "
                           "once (the browser then keeps it), or send the header <code>Authorization: Bearer "
                           "YOUR_TOKEN</code>",
                           "이 서버는 접근 토큰이 있어야 열립니다. 주소 뒤에 <code>?token=토큰</code>을 붙여 한 번 "
                           "열면 브라우저가 기억합니다. 스크립트는 <code>Authorization: Bearer 토큰</code> 헤더를 "
                           "보내세요."),
    "error.method_reason": ("{method} is not served; pages change state with POST only",
                            "{method} 요청은 받지 않습니다. 내용을 바꾸는 요청은 POST만 받습니다."),
    "error.cross_site": ("a request from another site ({origin}) may not change anything here",
                         "다른 사이트({origin})에서 온 요청으로는 여기서 아무것도 바꿀 수 없습니다."),
    "error.csrf": ("Refused: no valid CSRF token", "거부했습니다: 유효한 CSRF 토큰이 없습니다"),
    "error.csrf_reason": ("a change needs the CSRF token of the page it was made on (reload the page and try again)",
                          "변경 요청에는 그 요청을 보낸 페이지의 CSRF 토큰이 있어야 합니다. 페이지를 새로 고친 뒤 다시 "
                          "시도하세요."),
    "error.bad_length": ("received Content-Length {length}; expected a number",
                         "Content-Length 값으로 {length}을(를) 받았습니다. 숫자여야 합니다."),
    "error.body_too_large": ("the request body is over {limit:,} bytes", "요청 본문이 {limit:,}바이트를 넘습니다."),
    "error.too_many_fields": ("the form has more than {limit:,} fields; a page of this server sends a few dozen. "
                              "Reload the page and send it again.",
                              "폼의 필드가 {limit:,}개를 넘습니다. 이 서버의 페이지가 보내는 필드는 수십 개입니다. "
                              "페이지를 새로 고친 뒤 다시 보내세요."),
    "error.guard_failed": ("the request could not be checked: {what}. The server's terminal shows the details.",
                           "요청을 검사하지 못했습니다: {what}. 자세한 내용은 서버를 실행한 터미널에 있습니다."),
    "error.no_set": ("there is no question set number {sid}: this server shows only the files named on its command "
                     "line (see the home page)",
                     "{sid}번 질문 세트는 없습니다. 이 서버는 명령줄에서 지정한 파일만 보여 줍니다(처음 화면 참고)."),
    "error.no_item": ("the set {name} has no question or candidate {key}",
                      "{name} 세트에 질문이나 후보 {key}이(가) 없습니다."),
    "error.no_static": ("no static file {name}", "정적 파일 {name}은(는) 없습니다."),
    "error.unknown_action": ("Unknown action", "알 수 없는 동작"),
    "error.unknown_action_reason": ("received action {action}; expected one of {choices}",
                                    "동작으로 {action}을(를) 받았습니다. 다음 중 하나여야 합니다: {choices}"),
    "error.no_result": ("there is no run or score {key}: this server shows the folders named on its command line "
                        "and the records of the history <code>{history}</code> (see the runs list)",
                        "실행이나 채점 {key}은(는) 없습니다. 이 서버는 명령줄에서 지정한 폴더와 기록 "
                        "<code>{history}</code>의 기록만 보여 줍니다(실행 목록 참고)."),
    "error.is_score": ("{label} is a score: its answers are on its page",
                       "{label}은(는) 채점 결과입니다. 답변은 그 페이지에 있습니다."),
    "error.no_missed": ("{label} has no missed question {qid} of pipeline {pipeline}",
                        "{label}에는 파이프라인 {pipeline}이(가) 놓친 질문 {qid}이(가) 없습니다."),
    # -- home -----------------------------------------------------------------------------------------------------
    "home.results": ("Results", "결과"),
    "home.runs_link": ("Runs and scores", "실행과 채점"),
    "home.in_history": ("{n:,} in the history <code>{path}</code>", "기록 <code>{path}</code>에 {n:,}건",
                        "1 in the history <code>{path}</code>"),
    "home.and_folders": (" and {n:,} folders named on the command line", ", 명령줄에서 지정한 폴더 {n:,}개",
                         " and 1 folder named on the command line"),
    "home.open_one": ("Open one for its tables, plots and missed questions; compare two.",
                      "하나를 열면 표, 그래프, 놓친 질문을 볼 수 있고, 두 개를 골라 비교할 수 있습니다."),
    "home.history_unreadable": ("The history cannot be read; the folders named on the command line and the question "
                                "sets are still served.",
                                "기록을 읽을 수 없습니다. 명령줄에서 지정한 폴더와 질문 세트는 계속 볼 수 있습니다."),
    "home.latest": ("Latest:", "최근:"),
    "home.sets": ("Question sets to review", "검토할 질문 세트"),
    "home.no_sets": ("No question set was named. Start the server with <code>ragexam serve --review qa.jsonl</code> "
                     "(the set <code>ragexam generate</code> wrote; its rejects, card and review sheet are read from "
                     "beside it).",
                     "지정한 질문 세트가 없습니다. <code>ragexam serve --review qa.jsonl</code>로 서버를 시작하세요"
                     "(<code>ragexam generate</code>가 쓴 세트이며, 탈락 후보·카드·검토 시트는 같은 폴더에서 "
                     "읽습니다)."),
    "home.col.set": ("set", "세트"),
    "home.col.questions": ("questions", "질문"),
    "home.col.rescued": ("rescued", "구제"),
    "home.col.candidates": ("rejected candidates", "탈락 후보"),
    "home.col.sheet": ("review sheet", "검토 시트"),
    # -- the runs list --------------------------------------------------------------------------------------------
    "runs.title": ("Runs and scores", "실행과 채점"),
    "runs.picked": ("Comparing: A is <b>{label}</b>. Pick B below (<i>compare with A</i>), or",
                    "비교 중: A는 <b>{label}</b>입니다. 아래에서 B를 고르거나(<i>A와 비교</i>)"),
    "runs.cancel": ("cancel", "취소하세요"),
    "runs.named": ("Named on the command line", "명령줄에서 지정한 폴더"),
    "runs.col.folder": ("folder", "폴더"),
    "runs.col.id": ("id", "ID"),
    "runs.col.kind": ("kind", "종류"),
    "runs.col.dataset": ("dataset", "데이터셋"),
    "runs.col.date": ("date", "날짜"),
    "runs.col.headline": ("headline (95% CI)", "대표 지표 (95% 신뢰구간)"),
    "runs.compare": ("compare…", "비교…"),
    "runs.compare_with_a": ("compare with A", "A와 비교"),
    "runs.history": ("History", "기록"),
    "runs.n_records": ("{n:,} records", "기록 {n:,}건", "1 record"),
    "runs.no_records": ("no records yet", "아직 기록이 없습니다"),
    "runs.no_history": ("(no history yet: <code>ragexam run</code> records every run here)",
                        "(아직 기록 파일이 없습니다. <code>ragexam run</code>을 실행할 때마다 여기에 기록됩니다)"),
    "runs.find": ("find", "찾기"),
    "runs.find_hint": ("id, dataset or pipeline", "ID, 데이터셋, 파이프라인"),
    "runs.kind_any": ("runs and scores", "실행과 채점"),
    "runs.sort": ("sort", "정렬"),
    "runs.sort.recorded": ("date recorded", "기록한 날짜"),
    "runs.sort.created": ("date created", "만든 날짜"),
    "runs.sort.dataset": ("dataset", "데이터셋"),
    "runs.sort.headline": ("headline", "대표 지표"),
    "runs.sort.id": ("id", "ID"),
    "runs.order": ("order", "순서"),
    "runs.order.desc": ("newest / highest first", "최신순 / 높은 순"),
    "runs.order.asc": ("oldest / lowest first", "오래된 순 / 낮은 순"),
    "runs.none": ("No record matches.", "조건에 맞는 기록이 없습니다."),
    "runs.relevance.evidence": ("by evidence", "근거 기준"),
    "runs.relevance.doc": ("by document", "문서 기준"),
    "runs.relevance_hint.evidence": ("graded by evidence: a chunk counts when it contains an evidence string; k counts "
                                     "chunks", "근거 기준 채점: 근거 문자열이 든 청크가 정답, k는 청크 수"),
    "runs.relevance_hint.doc": ("graded by document: a chunk counts for its document; k counts distinct documents",
                                "문서 기준 채점: 청크는 그 문서로 정답 여부가 정해지고, k는 서로 다른 문서 수"),
    # -- a run ------------------------------------------------------------------------------------------------------
    "run.title": ("Run", "실행"),
    "run.facts.dataset": ('dataset <b class="data">{name}</b>', '데이터셋 <b class="data">{name}</b>'),
    "run.facts.pipelines": ("{n:,} pipelines", "파이프라인 {n:,}개", "1 pipeline"),
    "run.facts.scored": ("{n:,} scored questions", "채점한 질문 {n:,}개", "1 scored question"),
    "run.facts.run": ("run {id}", "실행 {id}"),
    "run.facts.relevance.evidence": ("graded by <b>evidence</b> (a chunk counts when it contains an evidence "
                                     "string; k counts chunks)",
                                     "<b>근거</b> 기준 채점(근거 문자열이 든 청크가 정답, k는 청크 수)"),
    "run.facts.relevance.doc": ("graded by <b>document</b> (a chunk counts for its document; k counts distinct "
                                "documents)",
                                "<b>문서</b> 기준 채점(청크는 그 문서로 정답 여부가 정해지고, k는 서로 다른 문서 수)"),
    "col.first_doc_rank": ("first relevant document: rank · its first chunk",
                           "첫 관련 문서: 순위 · 그 문서의 첫 청크"),
    "run.doc_rank": ("document {rank}", "문서 {rank}위"),
    "run.chunk_at": ("{chunk} at chunk rank {rank}", "{chunk} (청크 {rank}위)"),
    "run.folder": ("folder <code>{path}</code>", "폴더 <code>{path}</code>"),
    "run.record": ("history record", "기록에 저장된 실행"),
    "run.compare_this": ("compare with another run…", "다른 실행과 비교…"),
    "run.scores_of": ("scores of this run:", "이 실행의 채점:"),
    "run.history_unreadable": ("Scores recorded in the history are not shown: the history cannot be read.",
                               "기록을 읽을 수 없어 기록에 저장된 채점은 보여 주지 않습니다."),
    "run.from_score": ("Stage attribution, judge and answers from the score", "실패 단계 분석, 심사, 답변은 다음 채점에서 가져왔습니다:"),
    "run.missed_note": ("Answerable questions whose first correct chunk is not within the top {k} (or not found "
                        "within the search depth): {n:,} in all. Open one for the question, the evidence, the "
                        "answers and the retrieved chunks with the evidence <mark>marked</mark>.",
                        "답할 수 있는 질문 가운데 첫 정답 청크가 상위 {k}개 안에 없는(또는 검색 깊이 안에서 찾지 못한) "
                        "질문: 모두 {n:,}개. 하나를 열면 질문, 근거, 답변, 그리고 근거를 <mark>표시</mark>한 검색 "
                        "청크를 볼 수 있습니다."),
    # -- a missed question ------------------------------------------------------------------------------------------
    "missed.position": ("{pos:,} of {n:,} missed questions", "놓친 질문 {n:,}개 중 {pos:,}번째"),
    "missed.position_filtered": ("{pos:,} of {n:,} missed questions in this filter",
                                 "이 조건의 놓친 질문 {n:,}개 중 {pos:,}번째"),
    "missed.about_at": ("Missed by <b>{pipeline}</b> in run <code>{run}</code>: the first correct chunk at rank "
                        "{rank}, the cutoff k = {k}.",
                        "실행 <code>{run}</code>에서 <b>{pipeline}</b>이(가) 놓쳤습니다. 첫 정답 청크의 순위는 "
                        "{rank}, 기준 k = {k}입니다."),
    "missed.about_none": ("Missed by <b>{pipeline}</b> in run <code>{run}</code>: the first correct chunk not found, "
                          "the cutoff k = {k}.",
                          "실행 <code>{run}</code>에서 <b>{pipeline}</b>이(가) 놓쳤습니다. 정답 청크를 찾지 "
                          "못했습니다(기준 k = {k})."),
    "missed.from_score": ("Answer and stage from the score", "답변과 단계는 다음 채점에서 가져왔습니다:"),
    "missed.about_doc": ("Missed by <b>{pipeline}</b> in run <code>{run}</code>, graded by document: its first "
                         "relevant document at document rank {rank} (k = {k} counts documents); the first chunk of a "
                         "relevant document is <code>{chunk}</code> of <code>{doc}</code>, at chunk rank {chunk_rank}.",
                         "실행 <code>{run}</code>에서 <b>{pipeline}</b>이(가) 놓쳤습니다(문서 기준 채점). 첫 관련 "
                         "문서의 순위는 {rank}위입니다(k = {k}는 문서 수). 관련 문서의 첫 청크는 <code>{doc}</code>의 "
                         "<code>{chunk}</code>, 청크 순위 {chunk_rank}위입니다."),
    "missed.about_doc_unnamed": ("Missed by <b>{pipeline}</b> in run <code>{run}</code>, graded by document: its "
                                 "first relevant document at document rank {rank} (k = {k} counts documents); this run "
                                 "folder does not name its chunk.",
                                 "실행 <code>{run}</code>에서 <b>{pipeline}</b>이(가) 놓쳤습니다(문서 기준 채점). 첫 "
                                 "관련 문서의 순위는 {rank}위입니다(k = {k}는 문서 수). 이 실행 폴더에는 그 청크가 "
                                 "기록되어 있지 않습니다."),
    # -- a score ------------------------------------------------------------------------------------------------
    "score.title": ("Score", "채점"),
    "score.questions_of": ("questions of <b>{qa}</b>", "질문 세트 <b>{qa}</b>"),
    "score.answers_file": ("answers <code>{path}</code>", "답변 파일 <code>{path}</code>"),
    "score.n_answers": ("{n:,} answers", "답변 {n:,}개", "1 answer"),
    "score.scored_run": ("scored run", "채점한 실행"),
    "score.scored_run_elsewhere": ("scored run {run} (not shown by this server)",
                                   "채점한 실행 {run} (이 서버에는 없음)"),
    "score.compare_this": ("compare with another score…", "다른 채점과 비교…"),
    "score.nav.results": ("Results", "결과"),
    "score.nav.answers": ("Answers", "답변"),
    "score.results_note": ("Text metrics against the reference answers (answerable questions), <code>ok_share</code> "
                           "(the share of the decided answers whose stage is ok) and each judge metric's mean over the judged "
                           "answers with its 95% interval and coverage (judged / judgeable).",
                           "정답과 비교한 텍스트 지표(답할 수 있는 질문), <code>ok_share</code>(판정된 답변 가운데 "
                           "단계가 ok인 답변의 비율), 심사 지표마다 심사한 답변의 평균과 95% 신뢰구간, 그리고 판정 비율(심사함 / 심사 "
                           "대상)."),
    "score.coverage": ("coverage", "판정 비율"),
    "score.unjudged": ("{pipeline} unjudged:", "{pipeline} 미판정:"),
    "score.answers_note_full": ("Every answer with its stage label and verdict, the answer, and each judge metric's "
                                "verdict with the judge's reasoning.",
                                "모든 답변의 단계와 판정, 답변 내용, 그리고 심사 지표마다의 판정과 심사 모델의 "
                                "근거."),
    "score.answers_note_short": ("Every answer with its stage label and verdict. The answer texts and the judge's "
                                 "reasoning are in the score folder (<code>per_answer.csv</code>, "
                                 "<code>judgments.jsonl</code>);",
                                 "모든 답변의 단계와 판정. 답변 내용과 심사 모델의 근거는 채점 폴더"
                                 "(<code>per_answer.csv</code>, <code>judgments.jsonl</code>)에 있는데,"),
    "score.history_keeps_verdicts": ("the history keeps the verdicts only.", "기록에는 판정만 저장됩니다."),
    "score.folder_has_none": ("this folder has none.", "이 폴더에는 없습니다."),
    "score.details": ("details", "자세히"),
    "score.question_unavailable": ("not available:", "볼 수 없음:"),
    "score.set_not_at_hand": ("the question set {qa} is not at hand", "질문 세트 {qa}이(가) 여기 없음"),
    "score.set_unreadable": ("the question set {qa} cannot be read ({error})",
                             "질문 세트 {qa}을(를) 읽을 수 없음 ({error})"),
    "score.answers_not_at_hand": ("the answers file {answers}, whose traced answers carry their questions, is not at "
                                  "hand", "추적한 답변의 질문이 담긴 답변 파일 {answers}이(가) 여기 없음"),
    "score.answers_unreadable": ("the answers file {answers} cannot be read ({error})",
                                 "답변 파일 {answers}을(를) 읽을 수 없음 ({error})"),
    "score.question_in_neither": ("neither the question set nor the answers file has the question of {query_id}",
                                  "질문 세트에도 답변 파일에도 {query_id}의 질문이 없음"),
    "score.exam_question": ("exam question", "시험 문항"),
    "score.exam_match.exact": ("the same question", "같은 질문"),
    "score.exam_match.near": ("a near duplicate", "거의 같은 질문"),
    "score.exam_none": ("none: the question is not one of the set's", "없음: 세트의 어느 질문과도 일치하지 않음"),
    "score.exam_not_at_hand": ("the set's question is not at hand", "세트의 질문을 볼 수 없음"),
    "score.none": ("none", "없음"),
    "score.no_answer": ("none (no answer)", "없음 (답변 안 함)"),
    "score.not_in_record": ("not in the history record", "기록에 저장되지 않음"),
    "score.retrieved": ("retrieved:", "검색됨:"),
    "score.yes": ("yes", "예"),
    "score.no": ("no", "아니요"),
    "score.unknown": ("unknown", "알 수 없음"),
    "score.to_missed": ("the retrieved chunks (when the run missed it)", "검색된 청크 (실행이 놓쳤을 때)"),
    # -- compare ------------------------------------------------------------------------------------------------
    "compare.crumb": ("compare", "비교"),
    "compare.title": ("Compare", "비교"),
    "compare.how": ("Pick two runs (or two scores) on the <a href=\"/runs\">runs list</a>: <i>compare…</i> on the "
                    "first (A), then <i>compare with A</i> on the second (B). B − A is measured on the questions both "
                    "scored, paired, with Holm's correction over the metrics.",
                    "<a href=\"/runs\">실행 목록</a>에서 실행(또는 채점) 두 개를 고르세요. 첫 번째(A)에서 "
                    "<i>비교…</i>, 두 번째(B)에서 <i>A와 비교</i>를 누릅니다. B − A는 둘 다 채점한 질문에서 짝지어 "
                    "재고, 여러 지표에 Holm 보정을 합니다."),
    "compare.swap": ("swap", "A와 B 바꾸기"),
    "compare.pipeline_a": ("A's pipeline", "A의 파이프라인"),
    "compare.pipeline_a_any": ("every pipeline both have", "둘 다 있는 모든 파이프라인"),
    "compare.pipeline_b": ("B's pipeline", "B의 파이프라인"),
    "compare.pipeline_b_same": ("the same name", "A와 같은 이름"),
    "compare.button": ("compare", "비교"),
    "compare.cannot": ("Cannot compare", "비교할 수 없습니다"),
    "compare.no_shared": ("A and B have no pipeline of the same name (A: {a}; B: {b}). Choose one pipeline in "
                          "<b>A's pipeline</b> and one in <b>B's pipeline</b> above, then <i>compare</i>.",
                          "A와 B에 이름이 같은 파이프라인이 없습니다(A: {a}; B: {b}). 위의 <b>A의 파이프라인</b>과 "
                          "<b>B의 파이프라인</b>에서 하나씩 고른 뒤 <i>비교</i>를 누르세요."),
    "compare.not_in_a": ("A has no pipeline {name}; choose one of its own in <b>A's pipeline</b> above.",
                         "A에는 파이프라인 {name}이(가) 없습니다. 위의 <b>A의 파이프라인</b>에서 A의 것을 고르세요."),
    "compare.not_in_b": ("B has no pipeline {name}; choose one of its own in <b>B's pipeline</b> above.",
                         "B에는 파이프라인 {name}이(가) 없습니다. 위의 <b>B의 파이프라인</b>에서 B의 것을 고르세요."),
    "compare.run_and_score": ("A is {kind_a} and B is {kind_b}: two runs, or two scores, compare. Pick another B on the "
                              "<a href=\"/runs\">runs list</a>.",
                              "A는 {kind_a}, B는 {kind_b}입니다. 실행은 실행끼리, 채점은 채점끼리만 비교합니다. "
                              "<a href=\"/runs\">실행 목록</a>에서 B를 다시 고르세요."),
    "compare.refused": ("These two cannot be compared as they are:", "이 둘은 지금 상태로는 비교할 수 없습니다:"),
    "compare.pair_one": ("{b}: B − A on {n:,} shared questions", "{b}: 공통 질문 {n:,}개에서 B − A",
                         "{b}: B − A on 1 shared question"),
    "compare.pair_two": ("{b} (B) vs {a} (A): B − A on {n:,} shared questions",
                         "{b} (B) 대 {a} (A): 공통 질문 {n:,}개에서 B − A",
                         "{b} (B) vs {a} (A): B − A on 1 shared question"),
    "compare.how_read": ("diff = mean(B − A) on the same questions, with its 95% paired-bootstrap interval; p from the "
                         "paired randomization test, Holm-adjusted over these metrics. <span class=\"sig-up\">▲ "
                         "green</span> / <span class=\"sig-down\">▼ red</span>: significant after Holm (p &lt; 0.05) "
                         "and the interval excludes 0.",
                         "차이 = 같은 질문에서 (B − A)의 평균과 짝지은 부트스트랩 95% 신뢰구간. p는 짝지은 무작위화 "
                         "검정의 값이며, 이 지표들에 대해 Holm 보정을 했습니다. <span class=\"sig-up\">▲ 초록</span> / "
                         "<span class=\"sig-down\">▼ 빨강</span>: Holm 보정 후 유의하고(p &lt; 0.05) 신뢰구간이 "
                         "0을 포함하지 않음."),
    "compare.lost": ("Lost in B: found in A, missed in B (k = {k}): {n:,}",
                     "B에서 놓친 질문: A는 찾았지만 B는 놓침 (k = {k}): {n:,}개"),
    "compare.gained": ("Gained in B: missed in A, found in B (k = {k}): {n:,}",
                       "B에서 새로 찾은 질문: A는 놓쳤지만 B는 찾음 (k = {k}): {n:,}개"),
    "compare.rank_in": ("rank in {side}", "{side}의 순위"),
    "compare.where_missed": ("where {side} missed it", "{side}가 놓친 자리"),
    "compare.only": ("Scored only in A: {a:,}; only in B: {b:,}.", "A에서만 채점: {a:,}개, B에서만 채점: {b:,}개."),
    "compare.graded_differently": ("A and B were graded differently: identical rankings score differently under "
                                   "another grading, so B − A would show the change of grading as a change of "
                                   "retrieval.",
                                   "A와 B는 채점 방식이 다릅니다. 순위가 똑같아도 채점 방식이 다르면 점수가 달라지므로, "
                                   "B − A는 채점 방식의 변화를 검색 성능의 변화처럼 보여 줍니다."),
    "compare.grading.relevance": ("the relevance rule: A by {a}, B by {b}", "관련성 기준: A는 {a}, B는 {b}"),
    "compare.grading.overlap": ("the evidence cover policy: A {a}, B {b}", "근거 포함 기준: A는 {a}, B는 {b}"),
    "compare.grading.ignore_punctuation": ("evidence matching that ignores punctuation: A {a}, B {b}",
                                           "문장부호를 무시한 근거 비교: A는 {a}, B는 {b}"),
    "compare.grading.question_set": ("the question set (its judgments, evidence or answer keys changed): A "
                                     "<code>{a}</code>…, B <code>{b}</code>…",
                                     "질문 세트(관련성 판정, 근거, 정답이 바뀜): A <code>{a}</code>…, B "
                                     "<code>{b}</code>…"),
    "compare.grading_fix": ("Grade B again as A was (run it again with A's grading, on A's question set), or compare "
                            "anyway:",
                            "B를 A와 같은 방식으로 다시 채점하거나(A의 채점 방식과 질문 세트로 다시 실행), 그래도 "
                            "비교하려면:"),
    "compare.allow": ("compare anyway — the difference then includes the change of grading",
                      "그래도 비교 — 이때 차이에는 채점 방식의 변화가 함께 들어갑니다"),
    "compare.includes_grading": ("Compared although graded differently: every difference below includes the change "
                                 "of grading, not only the pipelines'.",
                                 "채점 방식이 다른데도 비교했습니다: 아래의 모든 차이에는 파이프라인의 차이뿐 아니라 "
                                 "채점 방식의 변화도 들어 있습니다."),
    "compare.doc_rank_in": ("document rank in {side}", "{side}의 문서 순위"),
    "relevance.evidence": ("evidence", "근거"),
    "relevance.doc": ("document", "문서"),
    # -- reviewing a set ----------------------------------------------------------------------------------------
    "review.title": ("Review: {name}", "검토: {name}"),
    "review.foot": ("decisions are written to the review sheet after every action",
                    "결정은 누를 때마다 바로 검토 시트에 저장됩니다"),
    "review.sheet": ("Sheet: <code>{path}</code> — apply it with <code>ragexam review apply --qa {qa} --out "
                     "reviewed.jsonl</code>",
                     "검토 시트: <code>{path}</code> — 반영하려면 <code>ragexam review apply --qa {qa} --out "
                     "reviewed.jsonl</code>"),
    "review.start": ("Review these {n:,} one by one", "이 {n:,}개를 하나씩 검토하기", "Review this 1 one by one"),
    "review.rows": ("rows {first:,}–{last:,}", "{first:,}–{last:,}행"),
    "review.rows_from": ("rows {first:,}–", "{first:,}행부터"),
    "review.empty": ("Nothing here: no item matches this filter.", "이 조건에 맞는 항목이 없습니다."),
    "review.progress": ("{decided:,} of {total:,} decided", "{total:,}개 중 {decided:,}개 결정"),
    "review.n_accepted": ("{n:,} accepted", "승인 {n:,}"),
    "review.n_rejected": ("{n:,} rejected", "거절 {n:,}"),
    "review.n_pending": ("{n:,} pending", "보류 {n:,}"),
    "review.n_edited": ("{n:,} edited", "수정 {n:,}"),
    "review.n_rescued": ("{n:,} rescued", "구제 {n:,}"),
    "review.n_candidates": ("{n:,} rejected candidates", "탈락 후보 {n:,}", "1 rejected candidate"),
    "review.audit": ("Audit:", "검수:"),
    "review.audit_link": ("audit a random sample", "무작위 표본 검수하기"),
    "review.queue": ("Review queue:", "검토 순서:"),
    "review.queue_risk": ("likely junk first — the audit measured that the checks' signals tell junk from good",
                          "불량일 가능성이 높은 것부터 — 검사 신호가 불량과 좋은 질문을 가른다고 검수로 측정됨"),
    "review.queue_random": ("random — the checks' signals were not shown to tell junk from good",
                            "무작위 — 검사 신호가 불량과 좋은 질문을 가른다는 근거가 없음"),
    "review.queue_start": ("Review in this order", "이 순서대로 검토하기"),
    "review.stop": ("Where to stop:", "멈춰도 되는 곳:"),
    "review.stop_none": ("nowhere before the end yet (audit more questions to know more)",
                         "아직 끝까지 검토해야 합니다 (더 많이 검수하면 더 일찍 멈출 수 있습니다)"),
    "review.stop_unaudited": ("not known without an audit: review every question, or audit a random sample first",
                              "검수 전에는 알 수 없습니다: 모든 질문을 검토하거나 먼저 무작위 표본을 검수하세요"),
    # the review queue's measured signals and stop point (ragexam.questions.risk: SignalCheck, StopPoint)
    "queue.random": ("the queue is in random order (seed {seed})", "검토 순서는 무작위입니다 (시드 {seed})"),
    "queue.auc": ("ROC AUC {auc} [{low}–{high}], n = {n:,} audited ({audited})",
                  "ROC AUC {auc} [{low}–{high}], 검수 {n:,}개 ({audited})"),
    "queue.audited_mixed": ("{bad:,} bad, {good:,} good", "불량 {bad:,}개, 좋음 {good:,}개"),
    "queue.audited_good": ("all good", "모두 좋음"),
    "queue.audited_bad": ("all bad", "모두 불량"),
    "queue.signals_none": ("the checks' signals are not measured (no audit): {random} until an audit shows they help",
                           "검사 신호를 측정하지 않았습니다 (검수 없음): 검수로 도움이 된다고 확인될 때까지 {random}"),
    "queue.signals_few": ("the checks' signals are not measured: {n:,} audited ({audited}) is too few (at least "
                          "{least} bad and {least} good): {random}",
                          "검사 신호를 측정하지 않았습니다: 검수 {n:,}개({audited})로는 부족합니다 (불량과 좋음이 각각 "
                          "{least}개 이상 필요): {random}"),
    "queue.signals_helps": ("the checks' signals put junk first: {auc}; the queue is ordered by predicted risk",
                            "검사 신호가 불량을 앞에 둡니다: {auc}; 검토 순서는 예측 위험도 순입니다"),
    "queue.signals_reversed": ("the checks' signals put good questions first, the wrong way round: {auc}; {random}",
                               "검사 신호가 오히려 좋은 질문을 앞에 둡니다: {auc}; {random}"),
    "queue.signals_unclear": ("the checks' signals do not tell junk from good: {auc}, an interval that includes 0.5; "
                              "{random}",
                              "검사 신호로는 불량과 좋은 질문을 가를 수 없습니다: {auc}, 구간이 0.5를 포함; {random}"),
    "queue.stop_whole": ("no review needed at this target: the whole set is predicted at most {high} junk, within the "
                         "target {target} ({seen}; {bound})",
                         "이 목표라면 검토하지 않아도 됩니다: 세트 전체의 불량이 최대 {high}로 예측되어 목표 {target} "
                         "이내입니다 ({seen}; {bound})"),
    "queue.stop_after": ("after the first {start:,} of the queue: the remaining {rest:,} are predicted at most {high} "
                         "junk, within the target {target} ({seen}; {bound})",
                         "순서의 처음 {start:,}개를 검토한 뒤: 나머지 {rest:,}개의 불량이 최대 {high}로 예측되어 목표 "
                         "{target} 이내입니다 ({seen}; {bound})"),
    "queue.stop_seen": ("{bad:,} bad of the {n:,} audited among them", "그중 검수한 {n:,}개에서 불량 {bad:,}개"),
    "queue.stop_seen_clean": ("none bad of the {n:,} audited among them", "그중 검수한 {n:,}개 모두 좋음"),
    "queue.stop_bound": ("an upper bound 97.5% sure at all {points} stop points of the queue at once",
                         "멈출 수 있는 {points}곳 모두에서 함께 97.5% 확실한 상한"),
    # -- auditing a set (ragexam.questions.audit) -----------------------------------------------------------------
    "audit.title": ("Audit: {name}", "검수: {name}"),
    "audit.crumb": ("audit", "검수"),
    "audit.what": ("The checks say how many questions passed, not how many are right. Read a random sample that "
                   "ragexam draws — never one you pick — and mark each question good or bad with a reason; ragexam "
                   "estimates the whole set's junk rate with an exact interval.",
                   "검사는 통과한 질문 수를 알려 줄 뿐, 맞는 질문 수는 알려 주지 않습니다. ragexam이 무작위로 뽑은 "
                   "표본(직접 고르지 않습니다)을 읽고 질문마다 좋음 또는 나쁨(사유와 함께)을 표시하면, ragexam이 "
                   "세트 전체의 불량률을 정확한 구간과 함께 추정합니다."),
    "audit.good_means": ("Good: answerable from its evidence, the answer key correct, natural language that stands on "
                         "its own.", "좋음: 근거로 답할 수 있고, 정답이 맞고, 혼자 읽어도 자연스러운 질문."),
    "audit.estimate": ("Estimate:", "추정:"),
    "audit.size": ("questions in the sample", "표본 질문 수"),
    "audit.start": ("Draw the sample", "표본 뽑기"),
    "audit.start_note": ("The sample is drawn with seed {seed} and kept beside the set in <code>{path}</code>, keyed "
                         "by the set's hash: an edited set is no longer audited. A larger number later extends the "
                         "same sample.",
                         "표본은 시드 {seed}로 뽑아 세트 옆 <code>{path}</code>에 세트의 해시와 함께 저장합니다. "
                         "세트를 고치면 검수는 더 이상 유효하지 않습니다. 나중에 더 큰 수를 넣으면 같은 표본을 "
                         "늘립니다."),
    "audit.stale": ("The set changed after its audit: draw a new sample (the labels of questions that read the same "
                    "are kept).", "검수한 뒤 세트가 바뀌었습니다. 표본을 새로 뽑으세요(그대로인 질문의 표시는 "
                    "유지됩니다)."),
    "audit.position": ("question {pos:,} of the {n:,} sampled", "표본 {n:,}개 중 {pos:,}번째 질문"),
    "audit.good": ("Good", "좋음"),
    "audit.bad": ("Bad:", "나쁨:"),
    "audit.undo": ("Undo", "되돌리기"),
    "audit.keys_help": ("<kbd>g</kbd> good · <kbd>1</kbd>–<kbd>6</kbd> bad, for that reason · <kbd>u</kbd> undo the "
                        "last label", "<kbd>g</kbd> 좋음 · <kbd>1</kbd>–<kbd>6</kbd> 그 사유로 나쁨 · <kbd>u</kbd> "
                        "마지막 표시 되돌리기"),
    "audit.done": ("Every sampled question is labelled.", "표본의 질문을 모두 표시했습니다."),
    "audit.more": ("Grow the sample", "표본 늘리기"),
    "audit.reasons": ("bad, by reason", "나쁨, 사유별"),
    "audit.undone": ("Undone: {key}", "되돌림: {key}"),
    "audit.nothing_to_undo": ("Nothing to undo.", "되돌릴 표시가 없습니다."),
    "audit.back": ("Back to the review", "검토로 돌아가기"),
    "home.col.audit": ("audit (junk rate)", "검수 (불량률)"),
    "item.position": ("{pos:,} of {n:,} in this filter", "이 조건의 {n:,}개 중 {pos:,}번째"),
    "item.not_in_filter": ("not in this filter ({n:,} are)", "이 조건에 속하지 않음 (조건에 맞는 항목 {n:,}개)",
                           "not in this filter (1 is)"),
    "item.keys": ("keys", "단축키"),
    "item.keys_help": ("<kbd>a</kbd> accept · <kbd>r</kbd> reject · <kbd>p</kbd> back to pending · <kbd>e</kbd> edit "
                       "(or rescue) · <kbd>s</kbd> use the text selected in a passage as evidence · <kbd>Ctrl</kbd>+"
                       "<kbd>Enter</kbd> check and save · <kbd>Esc</kbd> stop editing · <kbd>j</kbd>/<kbd>→</kbd> "
                       "next · <kbd>k</kbd>/<kbd>←</kbd> previous · <kbd>?</kbd> these keys",
                       "<kbd>a</kbd> 승인 · <kbd>r</kbd> 거절 · <kbd>p</kbd> 보류로 되돌리기 · <kbd>e</kbd> 수정(후보는 "
                       "구제) · <kbd>s</kbd> 지문에서 선택한 글을 근거로 넣기 · <kbd>Ctrl</kbd>+<kbd>Enter</kbd> 검사 "
                       "후 저장 · <kbd>Esc</kbd> 수정 그만두기 · <kbd>j</kbd>/<kbd>→</kbd> 다음 · <kbd>k</kbd>/"
                       "<kbd>←</kbd> 이전 · <kbd>?</kbd> 단축키 보기"),
    "item.conflict": ("Not saved: changed in another tab", "저장하지 않았습니다: 다른 탭에서 바뀌었습니다"),
    "item.conflict_note": ("This page now shows the question as it is saved. Decide again if you still want to.",
                           "이 페이지는 이제 저장된 상태의 질문을 보여 줍니다. 그래도 바꾸려면 다시 결정하세요."),
    "item.conflict_kept": ("What you typed is kept in the form below, not saved.",
                           "입력한 내용은 아래 양식에 남아 있으며, 저장되지 않았습니다."),
    "item.unsaved": ("Not saved -- your edit, kept: compare it with the question as saved above, then check and save "
                     "it again or cancel.",
                     "저장되지 않음 -- 입력한 수정 내용을 남겨 두었습니다. 위의 저장된 질문과 비교한 뒤 다시 검사하고 "
                     "저장하거나 취소하세요."),
    "item.refused": ("Refused", "거부했습니다"),
    "item.refused_checks": ("Not saved: the edit fails the generator's checks.",
                            "저장하지 않았습니다: 수정한 내용이 생성기의 검사를 통과하지 못했습니다."),
    "item.rejected_by_generator": ("rejected by the generator", "생성기가 탈락시킴"),
    "item.rescued_as": ("rescued as {key}", "{key}(으)로 구제됨"),
    "item.rescued_from": ("rescued from {reason}", "{reason}에서 구제됨"),
    "item.edited": ("edited:", "수정한 항목:"),
    "item.none": ("none", "없음"),
    "item.overlap": ("overlap", "겹침"),
    "item.overlap_value": ("{share} of the question's terms are in the evidence", "질문 용어 중 근거에 있는 비율 {share}"),
    "item.not_measured": ("not measured", "측정하지 않음"),
    "item.anchors": ("anchors", "앵커"),
    "item.answer_check": ("answer check", "답변 확인"),
    "item.note": ("note", "메모"),
    "item.checks_now": ("Checks now", "지금 검사한 결과"),
    "check.question": ("question", "질문"),
    "check.evidence": ("evidence", "근거"),
    "check.answer": ("answer", "답변"),
    "check.copy": ("copy", "근거 베끼기"),
    "check.duplicate": ("duplicate", "중복 질문"),
    "item.accept": ("Accept", "승인"),
    "item.reject": ("Reject", "거절"),
    "item.pending": ("Pending", "보류"),
    "item.edit": ("Edit", "수정"),
    "item.rescue": ("Rescue…", "구제…"),
    "item.rescue_title": ("Rescue this candidate", "이 후보 구제하기"),
    "item.edit_title": ("Edit", "수정"),
    "item.edit_note": ("Saving runs the generator's checks again; a change that fails one is refused with the reason.",
                       "저장하면 생성기의 검사를 다시 합니다. 검사를 통과하지 못한 수정은 사유와 함께 거부됩니다."),
    "item.evidence_legend": ("evidence (verbatim from a document; empty boxes are ignored)",
                             "근거 (문서에 있는 그대로; 빈 칸은 무시합니다)"),
    "item.check_rescue": ("Check and rescue", "검사 후 구제"),
    "item.check_save_accept": ("Check, save and accept", "검사 후 저장하고 승인"),
    "item.check_save": ("Check and save", "검사 후 저장"),
    "item.cancel": ("Cancel", "취소"),
    "item.record": ("verification record", "검증 기록"),
    "item.passages": ("Passages", "지문"),
    "item.n_marks": ("{n:,} evidence marks", "근거 표시 {n:,}곳", "1 evidence mark"),
    "item.near": ("closest verbatim piece of evidence not found (dashed)",
                  "찾지 못한 근거와 가장 비슷한 원문 조각 (점선)"),
    "item.near_title": ("the closest verbatim piece of evidence {n}", "근거 {n}과(와) 가장 비슷한 원문 조각"),
    "item.cut": ("A long document: shown around the evidence only.", "긴 문서라 근거 주변만 보여 줍니다."),
    "item.unsearched": ("Evidence {ev} has {size:,} characters: its closest piece is looked for in evidence of at most "
                        "{limit:,} characters only. Shorten it to a sentence of the document.",
                        "근거 {ev}은(는) {size:,}자입니다. 가장 비슷한 원문 조각은 {limit:,}자 이하의 근거에서만 "
                        "찾습니다. 문서의 한 문장 정도로 줄이세요."),
    "item.no_document": ("No document: the evidence occurs nowhere in the corpus.",
                         "문서가 없습니다: 근거가 코퍼스 어디에도 없습니다."),
    "item.no_document_ooc": ("No document: an out-of-corpus question has no passage.",
                             "문서가 없습니다: 코퍼스 밖 질문에는 지문이 없습니다."),
    # -- how the answer is known to be supported (serve.app.answer_support) ----------------------------------------
    "support.ooc_judged": ("out of corpus: the closest sections ({retriever}) were judged at most {max} of 5 relevant "
                           "(limit {limit})",
                           "코퍼스 밖 질문: 가장 가까운 구역({retriever})의 관련도가 5점 만점에 최대 {max}점으로 "
                           "판정됨 (한도 {limit})"),
    "support.ooc": ("out of corpus: {note}", "코퍼스 밖 질문: {note}"),
    "support.ooc_none": ("no out-of-corpus check recorded", "코퍼스 밖 검사 기록 없음"),
    "support.contained": ("answer found in evidence — not checked for correctness",
                          "근거에서 답을 찾음 — 정답인지는 검사하지 않음"),
    "support.vouched_edit": ("vouched for by the reviewer: no model checks an edited answer; <code>review apply</code> "
                             "records <code>answer_check: human</code>",
                             "검토자가 보증함: 수정한 답변은 모델이 검사하지 않으며, <code>review apply</code>가 "
                             "<code>answer_check: human</code>으로 기록합니다"),
    "support.judged": ("judged supported by the evidence: {metric} {score} ({supported} of {claims} claims, {rubric})",
                       "근거가 뒷받침한다고 판정됨: {metric} {score} (주장 {claims}개 중 {supported}개, {rubric})"),
    "support.vouched": ("vouched for by a reviewer", "검토자가 보증함"),
    "support.none": ("no answer check recorded", "답변 확인 기록 없음"),
    # -- what a decision did (serve.reviewing.ReviewSession.decide) --------------------------------------------------
    "outcome.no_item": ("no question or candidate {key} in this set", "이 세트에 질문이나 후보 {key}이(가) 없습니다"),
    "outcome.candidate_first": ("a rejected candidate is not in the set: rescue it first",
                                "탈락 후보는 세트에 없습니다. 먼저 구제하세요"),
    "outcome.status": ("{key}: {status}", "{key}: {status}"),
    "outcome.conflict": ("{key} was changed by someone else (another tab or program) since you opened it",
                         "{key}은(는) 이 화면을 연 뒤 다른 탭이나 프로그램에서 바뀌었습니다"),
    "outcome.unknown": ("unknown action {action}; expected one of {choices}",
                        "알 수 없는 동작 {action}. 다음 중 하나여야 합니다: {choices}"),
    "outcome.rescue_only_candidates": ("only a rejected candidate can be rescued", "탈락 후보만 구제할 수 있습니다"),
    "outcome.candidate_rescued": ("a rejected candidate is edited by rescuing it", "탈락 후보는 구제하면서 수정합니다"),
    "outcome.not_saved": ("not saved: {problem}", "저장하지 않았습니다: {problem}"),
    "outcome.rescued": ("rescued as {key}, checked and accepted", "{key}(으)로 구제했습니다 (검사 통과, 승인)"),
    "outcome.edited": ("{key}: edit checked and saved ({status})", "{key}: 수정 내용을 검사하고 저장했습니다 ({status})"),
    "outcome.no_runner_up": ("this question has no runner-up span to pick", "이 질문에는 고를 차순위 구간이 없습니다"),
    "outcome.runner_up": ("{key}: the runner-up checked and accepted as its evidence",
                          "{key}: 차순위 구간을 검사하고 근거로 승인했습니다"),
    "outcome.no_out_of_corpus": ("only a question of a generated or traced set can be marked out of corpus",
                                 "생성했거나 트레이스에서 뽑은 세트의 질문만 코퍼스 밖으로 표시할 수 있습니다"),
    "outcome.out_of_corpus": ("{key}: accepted as out of corpus (the documents do not answer it)",
                              "{key}: 코퍼스 밖 질문으로 승인했습니다(문서에 답이 없음)"),
    "outcome.no_evidence_to_accept": ("not accepted: the question has no evidence and no proposed span. Select its "
                                      "evidence in a document and press <kbd>s</kbd>, then save; or reject it",
                                      "승인하지 않았습니다: 근거도, 제안된 구간도 없습니다. 문서에서 근거를 선택하고 "
                                      "<kbd>s</kbd>를 누른 뒤 저장하거나, 거절하세요"),
    "outcome.proposal_refused": ("not accepted: the proposed span it would take fails a check: {problem}",
                                 "승인하지 않았습니다: 승인하면 쓰일 제안 구간이 검사를 통과하지 못했습니다: {problem}"),
    # -- a located set and sampled traces (serve.reviewing_located) ----------------------------------------------
    "item.refused_located": ("Not saved: the evidence fails the located set's check.",
                             "저장하지 않았습니다: 근거가 이 세트의 검사를 통과하지 못했습니다."),
    "item.edit_note_located": ("Saving checks that each evidence string occurs verbatim in a relevant document of the "
                               "question (in the corpus when it has none), as <code>review apply</code> does; a change "
                               "that fails is refused with the reason.",
                               "저장할 때 근거 문자열마다 질문의 관련 문서(없으면 코퍼스)에 그대로 있는지 "
                               "<code>review apply</code>와 똑같이 검사합니다. 통과하지 못한 수정은 이유와 함께 "
                               "거부합니다."),
    "item.keys_help_runner_up": ("<kbd>u</kbd> accept the runner-up as evidence", "<kbd>u</kbd> 차순위 구간을 근거로 승인"),
    "item.keys_help_ooc": ("<kbd>o</kbd> accept as out of corpus", "<kbd>o</kbd> 코퍼스 밖 질문으로 승인"),
    "item.none_takes_proposal": ("none yet: accepting takes the proposed span (marked in its document)",
                                 "아직 없음: 승인하면 제안된 구간(문서에 표시)을 근거로 씁니다"),
    "item.runner_up": ("Runner-up", "차순위로"),
    "item.out_of_corpus": ("Out of corpus", "코퍼스 밖"),
    "item.proposed_here": ("the proposed span", "제안 구간"),
    "item.runner_here": ("the runner-up", "차순위 구간"),
    "item.mark_proposed": ("the proposed span (accepting takes it when there is no evidence)",
                           "제안 구간(근거가 없으면 승인할 때 이 구간을 씁니다)"),
    "item.mark_runner": ("the runner-up span (key u takes it)", "차순위 구간(u 키로 고릅니다)"),
    "located.title": ("Where the evidence was located", "근거를 찾은 결과"),
    "located.status.located": ("located with confidence", "확신 있게 찾음"),
    "located.status.uncertain": ("uncertain", "불확실"),
    "located.status.unlocated": ("not located", "찾지 못함"),
    "located.status.kept": ("given evidence, verified", "원래 근거(확인됨)"),
    "located.status.kept_unverified": ("given evidence, not in the corpus", "원래 근거(코퍼스에 없음)"),
    "located.confidence": ("confidence {value} (threshold {threshold})", "확신도 {value} (기준 {threshold})"),
    "located.method": ("method", "방법"),
    "located.scope.documents": ("searched in its relevant documents", "관련 문서에서 찾음"),
    "located.scope.corpus": ("searched in the whole corpus", "코퍼스 전체에서 찾음"),
    "located.scope.hints": ("searched in the documents the trace retrieved", "트레이스가 검색한 문서에서 찾음"),
    "located.reason": ("why:", "이유:"),
    "located.hints": ("documents the trace retrieved:", "트레이스가 검색한 문서:"),
    "located.col.doc": ("document", "문서"),
    "located.col.confidence": ("confidence", "확신도"),
    "located.col.margin": ("margin", "차순위와의 차이"),
    "located.col.coverage": ("of the answer", "답변 포함 비율"),
    "located.col.spans": ("spans", "구간"),
    "located.proposed": ("proposed", "제안"),
    "located.runner_up": ("runner-up", "차순위"),
    "located.no_runner_up": ("none", "없음"),
    "located.choice.proposed": ("The evidence is the proposed span.", "근거는 제안된 구간입니다."),
    "located.choice.runner_up": ("The evidence is the runner-up span.", "근거는 차순위 구간입니다."),
    "located.choice_tag.proposed": ("proposed span", "제안 구간"),
    "located.choice_tag.runner_up": ("runner-up", "차순위"),
    "trace.title": ("What users asked", "사용자들이 물은 것"),
    "trace.answer": ("traced answer", "서비스가 한 답변"),
    "trace.frequency": ("asked {n:,} times", "{n:,}번 물음", "asked once"),
    "trace.share": ("{share} of the traffic", "전체 요청의 {share}"),
    "trace.phrasings": ("{n:,} phrasings", "표현 {n:,}가지", "1 phrasing"),
    "trace.negative": ("{n:,} with negative feedback", "부정 피드백 {n:,}건"),
    "trace.picked.first": ("picked first (flagged)", "먼저 뽑음(표시된 요청)"),
    "trace.picked.weighted": ("drawn by frequency", "빈도에 비례해 뽑음"),
    "trace.picked.top": ("among the most frequent", "가장 잦은 질문"),
    "trace.phrasings_title": ("how users phrased it", "사용자들의 표현"),
    "trace.contexts": ("{n:,} traced contexts", "트레이스의 검색 결과 {n:,}개", "1 traced context"),
    "trace.cut": ("cut: {n:,} characters", "잘림: 원래 {n:,}자"),
    "trace.no_contexts": ("The trace recorded no contexts.", "트레이스에 검색 결과가 기록되지 않았습니다."),
    "support.traced": ("the answer the service gave (traced): check it", "서비스가 한 답변(트레이스): 확인하세요"),
    "support.traced_negative": ("the answer the service gave, with negative feedback: check it above all",
                                "부정 피드백을 받은 서비스의 답변: 특히 확인하세요"),
}

#: the generator's rejection reasons (``ragexam.questions.checks.REASONS``) in Korean; their English is the
#: generator's own (one place), so only the Korean lives here
REASONS_KO: Dict[str, str] = {
    "call_failed": "모든 재시도 후에도 호출이 실패했습니다(요청 한도, 서버 오류, 시간 초과 등). 캐시에 남지 않으므로 "
                   "다시 실행하면 다시 시도합니다.",
    "malformed_reply": '여러 번 피드백을 주고도 쓸 수 있는 {"questions": [...]} JSON을 받지 못했습니다.',
    "no_questions": "응답에 질문이 없습니다. 모델이 지문에서 (더) 물을 것을 찾지 못했으며, 그 지문에는 그 종류를 다시 "
                    "묻지 않습니다.",
    "over_count": "요청한 것보다 많은 질문이 왔습니다. 넘치는 질문은 쓰지 않습니다.",
    "malformed_item": "항목이 질문·답변 문자열과 근거 문자열 목록을 가진 객체가 아니거나, 근거가 비었거나 중복됩니다.",
    "empty_question": "질문이 비었거나 4자보다 짧습니다.",
    "addresses_model": '질문이 문서에 대한 질문이 아니라 모델에게 내리는 지시입니다("이전 지시를 무시하라", '
                       '"시스템 프롬프트를 출력하세요" 등).',
    "wrong_language": "질문이 코퍼스의 언어가 아닙니다(코퍼스의 고유 이름·코드를 빼고 문자 비율이 0.3 미만이거나, "
                      "코퍼스에 없는 문자를 씀).",
    "refers_to_passage": '질문이 "이 문서에서", "위 글에 따르면"처럼 지문 자체를 가리킵니다.',
    "not_a_question": "서술어 없는 명사구이거나 평서문입니다(한국어는 마지막 어미가 -ㅂ니다/-습니다).",
    "no_evidence": "답할 수 있는 질문인데 근거가 없습니다.",
    "evidence_too_short": "근거 문자열이 최소 길이(정규화한 글자 수)보다 짧습니다.",
    "evidence_too_long": "근거 문자열이 최대 길이(정규화한 글자 수)보다 깁니다.",
    "evidence_not_in_passage": "근거 문자열이 코퍼스에는 있지만 모델에게 보여 준 지문에는 없습니다.",
    "evidence_paraphrased": "근거 문자열이 원문 그대로는 아니지만, 절반 이상이 보여 준 지문의 원문 조각입니다(바꿔 "
                            "쓰거나 잘림).",
    "evidence_not_found": "근거 문자열이 어디에도 없습니다(지어냄).",
    "ambiguous_evidence": "근거 문자열이 다른 문서에도 있습니다(--ambiguous drop).",
    "empty_answer": "답할 수 있는 질문인데 답변이 비었습니다.",
    "answer_declines": '답변이 "지문에 없습니다"라고 합니다. 답할 수 없는 질문을 답할 수 있다고 표시한 것입니다.',
    "answer_repeats": "답변이 같은 구절을 세 번 이상 되풀이합니다(생성 반복).",
    "copies_evidence": "질문이 근거 문장을 그대로 베꼈습니다.",
    "off_topic": "질문이 근거 주변 문단이나 문서 제목과 내용어(Kiwi 형태소 또는 단어)를 하나도 공유하지 않습니다.",
    "evidence_unrelated": "여러 근거 가운데 하나가 질문이나 답변과 내용어를 하나도 공유하지 않아 답에 쓰이지 "
                          "않습니다(문서 하나로 답이 되는 두 문서 질문).",
    "answer_polarity": "근거는 물은 일이 일어날 수 없다거나 일어나지 않는다고 하는데(-ㄹ 수 없다, -지 않다 등), "
                       "질문은 일어나는 것처럼 묻고 정답도 그렇지 않다고 말하지 않습니다.",
    "answer_type_mismatch": "질문은 언제·얼마·몇을 묻는데 정답에 시간이나 양이 없거나, 왜를 묻는데 근거에 이유가 "
                            "없거나 정답이 이유가 아닙니다(날짜, 숫자, 이름).",
    "contains_title": "질문이 출처 문서의 제목을 통째로 담고 있을 뿐 근거에 대해서는 더 묻지 않습니다. 문서에 대해 "
                      "묻는 질문이라 정답은 그 문서의 한 가지 사실에 그칩니다.",
    "fragment_key": "초점 문장에 문장 끝이 없고(문장 분리기가 목록이나 표의 줄바꿈에서 자름) 정답이 잘린 곳까지 "
                    "이어집니다.",
    "duplicate": "이미 남긴 질문과 거의 같습니다.",
    "answered_in_corpus": "코퍼스 밖 후보인데 코퍼스가 답합니다. 근거가 코퍼스에 있거나, 상위 검색 구역의 관련도가 "
                          "한도를 넘었습니다.",
    "not_a_content_question": "비평 기준으로 볼 때 근거가 말하는 한 가지를 묻는 독립된 질문이 아닙니다(글이나 형식에 "
                              "대한 질문, 근거와 다른 경우, 한 번에 여러 질문).",
    "evidence_does_not_answer": "근거와 질문만 받은 독자가 근거에서 답을 찾지 못했습니다.",
    "answer_disagrees": "근거만 보고 쓴 독자의 답에 정답이 없고, 정답과 비교한 심사의 answer_correctness가 기준보다 "
                        "낮습니다.",
    "answer_unsupported": "답변이 근거에 없는 내용을 주장합니다. 근거에 없는 말로 된 '예'이거나, LLM 검사가 뒷받침되지 "
                          "않는다고 본 주장입니다.",
    "check_failed": "LLM 검사를 하지 못했습니다(전송 실패, 쓸 수 없는 심사 응답). 다시 실행하면 다시 시도합니다.",
    "not_checked": "LLM 검사를 하지 않았습니다. --max-calls 또는 --budget에 도달했습니다.",
    "surplus": "검증은 통과했지만 그 유형의 목표 수와 세트 크기를 넘는 질문입니다.",
}
