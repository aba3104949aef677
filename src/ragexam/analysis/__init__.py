"""ragexam.analysis"""
