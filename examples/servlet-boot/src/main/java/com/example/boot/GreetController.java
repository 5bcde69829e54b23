package com.example.boot;

import org.springframework.stereotype.Controller;
import org.springframework.ui.Model;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.servlet.mvc.support.RedirectAttributes;

/** A Thymeleaf page with a form: post, redirect, get (the name travels in the query). */
@Controller
public class GreetController {
    @GetMapping("/")
    public String page(@RequestParam(required = false) String name, Model model) {
        model.addAttribute("name", name);
        return "greet";
    }

    @PostMapping("/greet")
    public String post(@RequestParam String name, RedirectAttributes redirect) {
        redirect.addAttribute("name", name.strip());
        return "redirect:/";
    }
}
