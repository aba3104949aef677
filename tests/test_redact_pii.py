"""Personal data out of imported traces (issue 38, item 4): the patterns of ``ragexam.llm.redact.PII_PATTERNS``,
Korean formats included, and what they must leave alone (error codes, dates, company numbers, versions)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragexam.llm.redact import PII_KINDS, PiiRedactor, luhn_valid, redact_pii

FOUND = [
    ("메일은 hong.gildong@example.co.kr 로 주세요", "메일은 [email] 로 주세요", "email"),
    ("contact: a_b+tag@mail.daon-systems.com.", "contact: [email].", "email"),
    ("주민번호 900101-1234567 입니다", "주민번호 [rrn] 입니다", "rrn"),
    ("주민등록번호9001012234567", "주민등록번호[rrn]", "rrn"),
    ("외국인등록번호 851231-5123456", "외국인등록번호 [rrn]", "rrn"),
    ("마스킹된 900101-1******도", "마스킹된 [rrn]도", "rrn"),
    ("카드 4111 1111 1111 1111 결제", "카드 [card] 결제", "card"),
    ("카드번호 5500-0000-0000-0004", "카드번호 [card]", "card"),
    ("AMEX 378282246310005", "AMEX [card]", "card"),
    ("카드 1234-56**-****-3456 승인", "카드 [card] 승인", "card"),
    ("010-1234-5678로 연락", "[phone]로 연락", "phone"),
    ("휴대폰 01012345678", "휴대폰 [phone]", "phone"),
    ("010 9876 5432 번", "[phone] 번", "phone"),
    ("+82 10-1234-5678", "[phone]", "phone"),
    ("+82-2-312-3456", "[phone]", "phone"),
    ("회사 02-123-4567", "회사 [phone]", "phone"),
    ("(02) 1234-5678", "[phone]", "phone"),
    ("031)123-4567", "[phone]", "phone"),
    ("인터넷전화 070-1234-5678", "인터넷전화 [phone]", "phone"),
    ("US +1 415 555 0100", "US [phone]", "phone"),
    ("신한 110-123-456789로 입금", "신한 [account]로 입금", "account"),
    ("카카오뱅크 3333-01-1234567", "카카오뱅크 [account]", "account"),
    ("국민 123456-01-123456", "국민 [account]", "account"),
    ("계좌번호: 1234567890123", "계좌번호: [account]", "account"),
    ("account no 12345678901", "account no [account]", "account"),
]
KEPT = [
    "날짜 2024-01-15, 오류 AUTH-LOCK-05, VPN-ERR-619",
    "UDP 4500 포트, TCP 443 모드",
    "고객센터 1588-1234",  # a company number, not personal
    "버전 10.2.3.4, 빌드 2024.12.01",
    "ISBN 978-89-1234-567-8",
    "카드 4111-1111-1111-1112",  # fails the Luhn check
    "PRN-0x4E, SWC-0x87D, SWC-1603",
    "매년 1월 1일, 30분, 5회, 12시간",
    "주문번호 20240115",
]


@pytest.mark.parametrize("text,want,kind", FOUND)
def test_personal_data_is_replaced(text, want, kind):
    r = PiiRedactor()
    assert r.text(text) == want
    assert r.counts == {kind: 1}


@pytest.mark.parametrize("text", KEPT)
def test_codes_dates_and_company_numbers_stay(text):
    r = PiiRedactor()
    assert r.text(text) == text and r.counts == {}


def test_value_redacts_strings_not_keys_and_counts_across_calls():
    r = PiiRedactor()
    v = r.value({"user@x.com": ["010-1234-5678", {"c": "a@b.io"}], "n": 3})
    assert v == {"user@x.com": ["[phone]", {"c": "[email]"}], "n": 3}
    r.text("b@c.de")
    assert r.counts == {"phone": 1, "email": 2}


def test_luhn():
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")


_local = st.from_regex(r"[a-z][a-z0-9._]{0,10}[a-z0-9]", fullmatch=True)
_domain = st.from_regex(r"[a-z]{2,8}(\.[a-z]{2,8}){0,2}\.(com|kr|net|io)", fullmatch=True)
_hangul = st.text(alphabet=st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3), max_size=12)


@given(_hangul, _local, _domain, st.from_regex(r"01[016789]-[0-9]{3,4}-[0-9]{4}", fullmatch=True), _hangul)
def test_no_address_or_mobile_number_survives_in_korean_text(before, local, domain, phone, after):
    text = f"{before} {local}@{domain} {phone} {after}"
    out = redact_pii(text)
    assert f"{local}@{domain}" not in out and phone not in out
    assert out == f"{before} [email] [phone] {after}"
    assert redact_pii(out) == out  # placeholders hold nothing to find again


def test_kinds_are_the_documented_ones():
    assert PII_KINDS == ("email", "rrn", "card", "phone", "account")
