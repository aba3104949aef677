"""ragexam.report"""
